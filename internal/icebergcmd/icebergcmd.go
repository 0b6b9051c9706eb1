// Package icebergcmd is the protocol between pchronicle and its helper
// binary pchronicle-iceberg, which holds the Iceberg writer
// (internal/iceberg). The writer's dependencies cost every process that
// links them about 0.1 s and 60 MB at start-up (docs/scale-out.md), and
// every query worker is a process of pchronicle: so pchronicle links only
// this package, and starts the helper for `import --to iceberg:`.
//
// One request goes to the helper's stdin as JSON, one response comes back
// on its stdout. Secrets travel only on the pipe, never in argv.
package icebergcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pchronicle/pchronicle/internal/objstore"
)

// Scheme prefixes an Iceberg destination: iceberg:PATH.db is a SQL catalog
// in a SQLite file, iceberg:https://host/path a REST catalog.
const Scheme = "iceberg:"

// DefaultNamespace holds the tables when no namespace is given.
const DefaultNamespace = "pchronicle"

// HelperName is the helper binary's name, looked up beside pchronicle's
// executable, then on $PATH.
const HelperName = "pchronicle-iceberg"

// ParseDest reports whether an import destination names an Iceberg
// catalog, and which.
func ParseDest(dest string) (catalogRef string, ok bool) {
	ref, ok := strings.CutPrefix(dest, Scheme)
	if !ok {
		return "", false
	}
	return ref, true
}

// Target says where a table set lives.
type Target struct {
	// Catalog is the path of the SQLite catalog file, or the http(s) URI of
	// a REST catalog.
	Catalog string
	// Warehouse is where data and metadata files go: a local directory or
	// s3://bucket/prefix. For a SQLite catalog it defaults to the directory
	// "warehouse" beside the catalog file; a REST catalog may name its own.
	Warehouse string
	// Store holds the S3 settings and credentials of the warehouse (as for
	// a pin).
	Store objstore.Config
	// Namespace holds the tables (default DefaultNamespace); dots separate
	// levels.
	Namespace string
	// Token is a bearer token for a REST catalog ("" for none).
	Token string
}

// Input is one imported file: its _file_ and its identity.
type Input struct {
	File     string
	Identity string
}

// Identity is the recorded version of a local input: the row schema's
// version, the size and the modification time, as a pin of a local file.
func Identity(schemaVersion int, fi os.FileInfo) string {
	return fmt.Sprintf("v%d size=%d mtime=%d", schemaVersion, fi.Size(), fi.ModTime().UnixNano())
}

// Commit is what publishing did to one table.
type Commit struct {
	Relation string
	// Snapshot is the id of the snapshot committed, 0 when the table
	// already recorded every input (nothing committed).
	Snapshot int64
	// Inputs is the number of inputs whose rows the snapshot replaced.
	Inputs int
	// Attempts is how many times the commit was tried (>1 after conflicts).
	Attempts int
}

// Operations of a request.
const (
	OpPending = "pending" // which Inputs some table does not record yet
	OpPublish = "publish" // commit the staged Generation's rows of Inputs
	OpFiles   = "files"   // the current snapshot and data files of each table
)

// TableFiles is one table's current snapshot, as a Dataset pins it.
type TableFiles struct {
	Snapshot int64    // 0 for a table without snapshots
	Location string   // the table's directory (local warehouses only)
	Files    []string // the snapshot's data files, local paths
	Bytes    int64    // their total size
}

// Request is what pchronicle asks the helper.
type Request struct {
	Op         string
	Target     Target
	Inputs     []Input
	Generation string `json:",omitempty"` // OpPublish: the staged Storyline store's directory
}

// Response is the helper's answer: Error is set when it failed.
type Response struct {
	Pending   []Input               `json:",omitempty"`
	Commits   []Commit              `json:",omitempty"`
	Tables    map[string]TableFiles `json:",omitempty"` // OpFiles, by relation
	Namespace string
	Error     string `json:",omitempty"`
}

// Helper finds the helper binary: beside the running executable, else on
// $PATH.
func Helper() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), HelperName)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	p, err := exec.LookPath(HelperName)
	if err != nil {
		return "", fmt.Errorf("Iceberg destinations need the %s binary beside pchronicle or on $PATH (go build ./cmd/%s): %w", HelperName, HelperName, err)
	}
	return p, nil
}

// Call sends one request to the helper and returns its response; a failure
// the helper reports is returned as an error.
func Call(ctx context.Context, req Request) (*Response, error) {
	bin, err := Helper()
	if err != nil {
		return nil, err
	}
	in, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin)
	cmd.Stdin = bytes.NewReader(in)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr // iceberg-go's warnings, as they come
	runErr := cmd.Run()
	var resp Response
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
		if runErr != nil {
			return nil, fmt.Errorf("%s: %w", HelperName, runErr)
		}
		return nil, fmt.Errorf("%s: unreadable answer: %w", HelperName, err)
	}
	if resp.Error != "" {
		return &resp, errors.New(resp.Error)
	}
	if runErr != nil {
		return nil, fmt.Errorf("%s: %w", HelperName, runErr)
	}
	return &resp, nil
}
