package storage

import (
	"github.com/gatehouse-id/gatehouse/factors"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/openid"
	"github.com/ory/fosite/handler/pkce"
	fositestorage "github.com/ory/fosite/storage"
)

// The interfaces *Store implements. fosite's doc comments are the contracts; publicauth's
// are too.
var (
	_ fosite.ClientManager               = (*Store)(nil)
	_ oauth2.CoreStorage                 = (*Store)(nil)
	_ oauth2.TokenRevocationStorage      = (*Store)(nil)
	_ openid.OpenIDConnectRequestStorage = (*Store)(nil)
	_ pkce.PKCERequestStorage            = (*Store)(nil)
	_ fositestorage.Transactional        = (*Store)(nil)
	_ publicauth.UserStore               = (*Store)(nil)
	_ publicauth.SessionStore            = (*Store)(nil)
	_ publicauth.Store                   = (*Store)(nil)
	_ factors.Store                      = (*Store)(nil)
)
