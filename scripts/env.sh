# Sourced by the project's scripts: the one place that pins toolchain settings.
# DuckDB is linked statically through cgo (duckdb-go-bindings), so a C
# compiler is the only system requirement; it is on every Go machine here.
export CGO_ENABLED=1
# duckdb_arrow builds DuckDB's Arrow interface, which columnar results use
# (internal/engine/arrow.go).
# Added to any GOFLAGS of the caller's, whose own settings are kept.
export GOFLAGS="${GOFLAGS:--buildvcs=false} -tags=duckdb_arrow"
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v gcc >/dev/null 2>&1; then
  echo "scripts/env.sh: installing gcc (needed by cgo for DuckDB)" >&2
  apt-get update -qq && apt-get install -y -qq gcc >/dev/null
fi

# version_ldflags prints the -X flags that stamp `pchronicle --version`: the
# release version (VERSION, else the newest v* tag git describes, else
# v0.0.0-dev) and the commit, with -dirty when the work tree has changes.
version_ldflags() {
  local pkg=github.com/pchronicle/pchronicle/internal/cli version commit=""
  version=${VERSION:-$(git describe --tags --match 'v*' 2>/dev/null || echo v0.0.0-dev)}
  if commit=$(git rev-parse HEAD 2>/dev/null); then
    [ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit-dirty"
  fi
  echo "-X $pkg.Version=$version -X $pkg.Commit=$commit"
}
