// Package storagetest is the storage conformance suite: every storage case, written once,
// that each database backend must pass (in the style of dex's storage/conformance).
//
//	func TestConformance(t *testing.T) {
//		for _, b := range storagetest.Backends(t) {
//			t.Run(b.Name, func(t *testing.T) { storagetest.Run(t, b.Open) })
//		}
//	}
//
// SQLite always runs. Postgres runs when GATEHOUSE_TEST_POSTGRES_DSN names a database the
// tests may create schemas in; with GATEHOUSE_REQUIRE_POSTGRES=1 a missing DSN fails the
// test instead of skipping Postgres (CI sets it).
package storagetest
