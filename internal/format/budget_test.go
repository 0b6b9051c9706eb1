package format

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A document that fits the budget only once others are done waits for
// them; one that could never fit fails at once, before anything is read,
// naming the file, the memory it needs and the option that raises it.
func TestDocumentBudgetWaitsOrRefuses(t *testing.T) {
	doc := `{"messages":[]}`
	b := NewDocumentBudget(int64(len(doc)) * documentCharge * 3 / 2) // one document at a time
	ctx := WithDocumentBudget(context.Background(), b)
	src := Source{Path: "a.json", Size: int64(len(doc))}
	data, release, err := ReadDocument(ctx, strings.NewReader(doc), src, "test")
	if err != nil || string(data) != doc {
		t.Fatalf("first document: %q, %v", data, err)
	}
	second := make(chan error, 1)
	go func() {
		_, release2, err := ReadDocument(ctx, strings.NewReader(doc), Source{Path: "b.json", Size: int64(len(doc))}, "test")
		if err == nil {
			release2()
		}
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("the second document did not wait for the first: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	release() // a second release gives nothing back twice
	if err := <-second; err != nil {
		t.Fatalf("second document after the first: %v", err)
	}
	if b.used != 0 {
		t.Fatalf("%d bytes still held after both were released", b.used)
	}

	big := Source{Path: "dir/huge.json", Size: b.limit}
	r := &countingReader{r: strings.NewReader(doc)}
	_, _, err = ReadWhole(ctx, r, big, "test")
	var be *BudgetError
	if !errors.As(err, &be) || be.Path != "dir/huge.json" || be.Limit != b.limit || be.Need != b.limit*documentCharge {
		t.Fatalf("a document larger than the budget: %v", err)
	}
	for _, want := range []string{"dir/huge.json", "max_document_memory", "--max-document-memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
	if r.n != 0 {
		t.Fatalf("%d bytes of the refused document were read", r.n)
	}
}

// A wait for the budget ends with the query.
func TestDocumentBudgetWaitEndsWithContext(t *testing.T) {
	b := NewDocumentBudget(documentCharge * 10)
	ctx, cancel := context.WithTimeout(WithDocumentBudget(context.Background(), b), 50*time.Millisecond)
	defer cancel()
	_, release, err := ReadWhole(ctx, strings.NewReader("0123456789"), Source{Path: "a.json", Size: 10}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, _, err := ReadWhole(ctx, strings.NewReader("x"), Source{Path: "b.json", Size: 1}, "test"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting past the deadline: %v", err)
	}
}

type countingReader struct {
	r interface{ Read([]byte) (int, error) }
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
