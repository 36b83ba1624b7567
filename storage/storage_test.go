package storage_test

import (
	"testing"

	"github.com/gatehouse-id/gatehouse/storage"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

func TestConformance(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			storagetest.Run(t, b.Open)
			storagetest.RunReplicas(t, b.Replicas)
		})
	}
}

// TestConformanceWithTablePrefix runs the suite again on stores whose every table carries a
// prefix: a statement that missed the prefix finds no table.
func TestConformanceWithTablePrefix(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			storagetest.Run(t, func(t *testing.T) *storage.Store {
				return b.OpenWith(t, storage.WithTablePrefix("gatehouse_"))
			})
		})
	}
}
