package web_test

import (
	"os"
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.RunMain(m)) }
