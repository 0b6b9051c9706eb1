package main

import (
	"os"
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.RunMain(m)) }
