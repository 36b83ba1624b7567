package provider

import "github.com/gatehouse-id/gatehouse/publicauth"

// ProfileChange is a change of a user's name and OpenID Connect standard profile
// (UserUpdate.Profile): publicauth.ProfileChange. Each field that is not nil is set ("" clears
// it); Address replaces the whole address.
type ProfileChange = publicauth.ProfileChange

// Profile is a user's OpenID Connect standard profile (Core §5.1): publicauth.Profile.
type Profile = publicauth.Profile

// Address is the postal address of a Profile: publicauth.Address.
type Address = publicauth.Address
