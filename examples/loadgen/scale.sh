# Loaders of the scale option of bench.sh (BENCH_SCALE=1), sourced by it: each function
# fills one table of the Postgres database at $1 with bulk SQL run by the server itself
# (INSERT … SELECT FROM generate_series), rows shaped like the ones Gatehouse writes: valid
# foreign keys, signatures of the real length, real session JSON, expiry spread from ten
# days ago to thirty days ahead, so the indexes and the janitor meet real data.
# scale_loaders lists them in order; a new table is one more function and one more entry.

scale_users=${BENCH_SCALE_USERS:-100000}
scale_refresh_tokens=${BENCH_SCALE_REFRESH_TOKENS:-1000000}
scale_revocation_rules=${BENCH_SCALE_REVOCATION_RULES:-200000}

# scale_user_id N is the SQL expression of the id of scale user N (a UUID).
scale_user_id() { echo "uuid_in(md5('scale-user-' || ($1))::cstring)::text"; }

# load_users DSN: $scale_users verified users with the bench user's argon2id hash.
load_users() {
	psql -q -v ON_ERROR_STOP=1 "$1" <<SQL
INSERT INTO users (id, email, email_lower, email_verified, name, password_hash, role, status, created_at, updated_at)
SELECT $(scale_user_id i), 'scale' || i || '@example.com', 'scale' || i || '@example.com', true, 'Scale ' || i,
       (SELECT password_hash FROM users WHERE email_lower = 'bench@example.com'), 'user', 'active',
       now() - (i % 365) * interval '1 day', now() - (i % 365) * interval '1 day'
FROM generate_series(1, $scale_users) AS i;
SQL
}

# load_refresh_tokens DSN: $scale_refresh_tokens refresh tokens of the scale users for the
# clients rp and rp-es256; one in ten already used (inactive), about a quarter expired.
load_refresh_tokens() {
	psql -q -v ON_ERROR_STOP=1 "$1" <<SQL
INSERT INTO refresh_tokens (signature, request_id, requested_at, client_id, subject, requested_scopes, granted_scopes,
	requested_audience, granted_audience, form, session_data, access_signature, active, expires_at)
SELECT rtrim(translate(encode(sha256(('rt' || i)::bytea), 'base64'), '+/', '-_'), '='),
       uuid_in(md5('scale-request-' || i)::cstring)::text, t.exp - interval '30 days',
       t.client, t.sub,
       '["openid","profile","email","offline_access"]', '["openid","profile","email","offline_access"]', '[]', '[]',
       'client_id=' || t.client || '&grant_type=authorization_code',
       json_build_object('id_token_claims', json_build_object('jti', '', 'iss', 'http://127.0.0.1', 'sub', t.sub,
           'aud', null, 'nonce', '', 'amr', json_build_array('pwd'), 'ext', json_build_object('azp', t.client,
           'email', 'scale' || t.u || '@example.com', 'email_verified', true, 'name', 'Scale ' || t.u)),
         'headers', json_build_object('extra', null),
         'expires_at', json_build_object('refresh_token', t.exp, 'access_token', t.exp - interval '719 hours'),
         'username', 'scale' || t.u || '@example.com', 'subject', t.sub, 'client_id', t.client, 'user_bound', true)::text,
       rtrim(translate(encode(sha256(('at' || i)::bytea), 'base64'), '+/', '-_'), '='),
       i % 10 <> 0, t.exp
FROM generate_series(1, $scale_refresh_tokens) AS i,
     LATERAL (SELECT (i::bigint * 7919) % $scale_users + 1 AS u) AS pick,
     LATERAL (SELECT pick.u, $(scale_user_id pick.u) AS sub, CASE WHEN i % 2 = 0 THEN 'rp' ELSE 'rp-es256' END AS client,
                     now() + ((i::bigint * 104729) % 4000 / 100.0 - 10) * interval '1 day' AS exp) AS t;
ANALYZE users;
ANALYZE refresh_tokens;
SQL
}

# load_revocation_rules DSN: $scale_revocation_rules rules as storage/revocation_rules.go
# writes them, by kind in turn: the grant of a scale refresh token (refresh rotation and
# reuse), a scale user at rp (permission revocation), a scale user (credential change), one
# jti (the revocation endpoint); issued_before in microseconds, expiry spread from an hour
# ago to an hour ahead, so the janitor has work.
load_revocation_rules() {
	psql -q -v ON_ERROR_STOP=1 "$1" <<SQL
INSERT INTO revocation_rules (rule_key, issued_before, expires_at)
SELECT CASE i % 4
         WHEN 0 THEN 'grant:' || uuid_in(md5('scale-request-' || i)::cstring)::text
         WHEN 1 THEN 'subclient:36:' || $(scale_user_id "i % $scale_users + 1") || 'rp'
         WHEN 2 THEN 'sub:' || $(scale_user_id "i % $scale_users + 1")
         ELSE 'jti:' || uuid_in(md5('scale-jti-' || i)::cstring)::text
       END,
       (extract(epoch FROM t.at) * 1000000)::bigint, t.at + interval '1 hour'
FROM generate_series(1, $scale_revocation_rules) AS i,
     LATERAL (SELECT now() - ((i::bigint * 104729) % 7200) * interval '1 second' AS at) AS t
ON CONFLICT (rule_key) DO NOTHING;
ANALYZE revocation_rules;
SQL
}

scale_loaders=(load_users load_refresh_tokens load_revocation_rules)

# scale_table_sizes DSN prints rows, expired rows and size on disk of the tables that grow.
scale_table_sizes() {
	psql -q -v ON_ERROR_STOP=1 "$1" <<SQL
SELECT 'users' AS "table", count(*) AS rows, NULL::bigint AS expired, pg_size_pretty(pg_total_relation_size('users')) AS size FROM users
UNION ALL SELECT 'refresh_tokens', count(*), count(*) FILTER (WHERE expires_at < now()), pg_size_pretty(pg_total_relation_size('refresh_tokens')) FROM refresh_tokens
UNION ALL SELECT 'revocation_rules', count(*), count(*) FILTER (WHERE expires_at < now()), pg_size_pretty(pg_total_relation_size('revocation_rules')) FROM revocation_rules
UNION ALL SELECT 'authorization_codes', count(*), count(*) FILTER (WHERE expires_at < now()), pg_size_pretty(pg_total_relation_size('authorization_codes')) FROM authorization_codes
UNION ALL SELECT 'sessions', count(*), count(*) FILTER (WHERE expires_at < now()), pg_size_pretty(pg_total_relation_size('sessions')) FROM sessions;
SQL
}
