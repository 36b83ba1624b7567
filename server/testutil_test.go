package server

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-id/gatehouse/internal/testlog"
)

// logLines decodes the JSON log lines written so far.
func logLines(t *testing.T, s *testlog.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	return lines
}

// findLog returns the first log line with message msg, or nil.
func findLog(t *testing.T, s *testlog.Buffer, msg string) map[string]any {
	t.Helper()
	for _, l := range logLines(t, s) {
		if l["msg"] == msg {
			return l
		}
	}
	return nil
}
