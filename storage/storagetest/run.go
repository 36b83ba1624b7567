package storagetest

import (
	"testing"

	"github.com/gatehouse-id/gatehouse/storage"
)

// Run runs every storage case as a subtest of t, each on a fresh store from open.
func Run(t *testing.T, open func(t *testing.T) *storage.Store) {
	t.Helper()
	cases := []storageCase{
		{"MigrateIsIdempotent", testMigrateIdempotent},
		{"ClientRoundTrip", testClientRoundTrip},
		{"ClientResourceServer", testClientResourceServer},
		{"ClientRequireDPoP", testClientRequireDPoP},
		{"ClientCreateTwiceConflicts", testClientCreateTwice},
		{"ListClientsOrdered", testListClients},
		{"MissingRows", testMissingRows},
		{"UserEmailCaseInsensitive", testUserEmailCaseInsensitive},
		{"UserEmailLookAlikesDistinct", testUserEmailLookAlikes},
		{"TimeZonesStoredUTC", testTimeZones},
		{"SessionExpiry", testSessionExpiry},
		{"AuthRequestExpiryAndLogin", testAuthRequest},
		{"DeleteExpired", testDeleteExpired},
		{"Janitor", testJanitor},
		{"Transactions", testTransactions},
		{"FositeRequestRoundTrip", testFositeRoundTrip},
		{"AuthorizeCodeInvalidation", testCodeInvalidation},
		{"ConcurrentCodeInvalidation", testConcurrentCodeInvalidation},
		{"AccessTokenRevocation", testAccessTokenRevocation},
		{"NilSessionPrototype", testNilSessionPrototype},
		{"RefreshRotationAndFamilyRevocation", testRefreshRotation},
		{"ConcurrentRefreshRotation", testConcurrentRefreshRotation},
		{"RefreshReuseGrace", testRefreshReuseGrace},
		{"RefreshReuseGraceRacesTheSuccessor", testRefreshReuseGraceRace},
		{"ClientAssertionJTI", testClientAssertionJTI},
		{"ConcurrentClientAssertionJTI", testConcurrentClientAssertionJTI},
		{"ConsentUpsert", testConsentUpsert},
		{"ConcurrentSaveConsent", testConcurrentSaveConsent},
		{"ConcurrentCreateUser", testConcurrentCreateUser},
		{"SigningKeyRotation", testSigningKeyRotation},
		{"ConcurrentSigningKeyRotation", testConcurrentSigningKeyRotation},
		{"DeleteClientCascades", testDeleteClientCascade},
		{"ClientCacheLocalWrites", testClientCacheLocalWrites},
		{"RevokeTokensOf", testRevokeTokensOf},
		{"RevokeUserGrants", testRevokeUserGrants},
	}
	cases = append(cases, publicAuthCases()...)
	cases = append(cases, permissionCases()...)
	cases = append(cases, socialCases()...)
	cases = append(cases, adminCases()...)
	cases = append(cases, ruleCases()...)
	cases = append(cases, deviceCases()...)
	cases = append(cases, profileCases()...)
	cases = append(cases, parCases()...)
	cases = append(cases, backchannelCases()...)
	cases = append(cases, sessionCases()...)
	cases = append(cases, securityEventCases()...)
	cases = append(cases, registrationCases()...)
	cases = append(cases, mailCases()...)
	cases = append(cases, sessionMethodCases()...)
	cases = append(cases, factorCases()...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, open(t))
		})
	}
}

// RunReplicas runs the cases about several replicas of one deployment as subtests of t,
// each on two stores on one fresh database from replicas.
func RunReplicas(t *testing.T, replicas func(t *testing.T) (a, b *storage.Store)) {
	t.Helper()
	for _, c := range []struct {
		name string
		run  func(t *testing.T, a, b *storage.Store)
	}{
		{"RevocationSeenAcrossReplicas", testRevocationAcrossReplicas},
		{"UserChangeSeenAcrossReplicas", testUserChangeAcrossReplicas},
		{"SessionEndSeenAcrossReplicas", testSessionEndAcrossReplicas},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := replicas(t)
			c.run(t, a, b)
		})
	}
}

// storageCase is one case of the suite: a name and a test of a fresh store.
type storageCase struct {
	name string
	run  func(t *testing.T, s *storage.Store)
}
