// Command pchronicle-iceberg is the helper that `pchronicle import --to
// iceberg:...` starts to read and commit Apache Iceberg tables. It serves one
// request (internal/icebergcmd) from stdin and writes its answer to stdout;
// it is a separate binary so that pchronicle's other processes do not pay
// the Iceberg libraries' start-up (docs/scale-out.md).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/pchronicle/pchronicle/internal/iceberg"
	"github.com/pchronicle/pchronicle/internal/icebergcmd"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var req icebergcmd.Request
	dec := json.NewDecoder(os.Stdin)
	dec.DisallowUnknownFields()
	resp := icebergcmd.Response{}
	err := dec.Decode(&req)
	if err == nil {
		err = serve(ctx, req, &resp)
	} else {
		err = fmt.Errorf("%s reads one JSON request on stdin from pchronicle: %w", icebergcmd.HelperName, err)
	}
	if err != nil {
		resp.Error = err.Error()
	}
	if err := json.NewEncoder(os.Stdout).Encode(resp); err != nil || resp.Error != "" {
		os.Exit(1)
	}
}

func serve(ctx context.Context, req icebergcmd.Request, resp *icebergcmd.Response) error {
	set, err := iceberg.Open(ctx, req.Target)
	if err != nil {
		return err
	}
	defer set.Close()
	resp.Namespace = set.Namespace()
	switch req.Op {
	case icebergcmd.OpPending:
		if err := set.Ensure(ctx); err != nil {
			return err
		}
		resp.Pending, err = set.Pending(ctx, req.Inputs)
		return err
	case icebergcmd.OpPublish:
		st, err := storyline.Open(req.Generation)
		if err != nil {
			return err
		}
		g, err := st.Pin()
		if err != nil {
			return err
		}
		resp.Commits, err = set.Publish(ctx, req.Inputs, iceberg.GenerationRows(g))
		return err
	case icebergcmd.OpFiles:
		resp.Tables, err = set.Files(ctx)
		return err
	}
	return errors.New("unknown operation " + req.Op)
}
