package provider_test

import (
	"io"
	"log/slog"
)

// discardLogger keeps expected error logs out of test and benchmark output.
func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
