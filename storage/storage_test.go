package storage_test

import (
	"testing"

	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

func TestConformance(t *testing.T) {
	for _, b := range storagetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { storagetest.Run(t, b.Open) })
	}
}
