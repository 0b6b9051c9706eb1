package catalog

import "context"

// ResolveProgress is told about the normalization a query's sources need:
// a command shows it on a terminal (docs/cli.md, "Progress"). Start is
// called once per batch with the sources and bytes it will normalize, Done
// once per source when it is normalized (or failed). Calls may come from
// several goroutines at once.
type ResolveProgress interface {
	Start(sources int, bytes int64)
	Done(bytes int64)
}

type progressKey struct{}

// WithResolveProgress returns a context whose resolutions report to p.
func WithResolveProgress(ctx context.Context, p ResolveProgress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// resolveProgress is the context's ResolveProgress, or one that does
// nothing.
func resolveProgress(ctx context.Context) ResolveProgress {
	if p, ok := ctx.Value(progressKey{}).(ResolveProgress); ok {
		return p
	}
	return noProgress{}
}

type noProgress struct{}

func (noProgress) Start(int, int64) {}
func (noProgress) Done(int64)       {}
