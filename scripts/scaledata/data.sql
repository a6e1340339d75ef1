-- The production-sized data set of the scale benchmark, built set-based.
-- Parameters: $1 players, $2 the password hash every generated player
-- shares, $3 the template player whose starter decks every player gets.
-- Player i has id md5('u'||i)::uuid and nickname sp<i>; its first session's
-- token is md5('scale-'||i), so the benchmark can sign its cookie. Player 0
-- is the heavy social player: 200 friends, 1,000 incoming and 50 outgoing
-- requests, 20 blocks; the generic graph below never touches it.
-- Statements are separated by lines of "--split".

CREATE TEMP TABLE scale_decks AS
SELECT row_number() OVER (ORDER BY d.created_at, d.id) AS n, d.name, d.code, d.source,
       d.id = p.default_deck_id AS is_default
FROM player_decks d JOIN player_profiles p ON p.user_id = d.user_id
WHERE d.user_id = $3
--split
INSERT INTO users (id, realm, email, name, nickname, nickname_key, email_verified, password_hash, created_at, updated_at)
SELECT md5('u' || i)::uuid, 'player', 'sp' || i || '@scale.example.com', 'Scale Player ' || i, 'sp' || i, 'sp' || i,
       i % 5 <> 0, $2, now() - ((i * 37) % 730) * interval '1 day', now() - ((i * 37) % 730) * interval '1 day'
FROM generate_series(0, $1 - 1) AS i
--split
INSERT INTO player_decks (id, user_id, name, code, source, created_at, updated_at)
SELECT md5('d' || i || '-' || t.n)::uuid, md5('u' || i)::uuid, t.name, t.code, t.source,
       now() - ((i * 37) % 730) * interval '1 day', now() - ((i * 37) % 730) * interval '1 day'
FROM generate_series(0, $1 - 1) AS i CROSS JOIN scale_decks t
--split
INSERT INTO player_profiles (user_id, default_deck_id, starter_granted, created_at, updated_at)
SELECT md5('u' || i)::uuid, md5('d' || i || '-' || (SELECT n FROM scale_decks WHERE is_default LIMIT 1))::uuid, TRUE,
       now() - ((i * 37) % 730) * interval '1 day', now() - ((i * 37) % 730) * interval '1 day'
FROM generate_series(0, $1 - 1) AS i
--split
-- Three sessions per player; the first of every player and the second of
-- one in five are alive (40%), the rest expired within the last 60 days.
-- A token is stored as its binary SHA-256, as auth.HashToken computes it.
INSERT INTO sessions (id, token_hash, user_id, realm, remember, expires_at, created_at, updated_at, ip_address, user_agent)
SELECT md5('s' || i || '-' || k)::uuid,
       sha256(convert_to(CASE WHEN k = 0 THEN md5('scale-' || i) ELSE md5('scale-' || i || '-' || k) END, 'UTF8')),
       md5('u' || i)::uuid, 'player', TRUE,
       CASE WHEN k = 0 OR (k = 1 AND i % 5 = 0) THEN now() + interval '20 days' + (i % 240) * interval '1 hour'
            ELSE now() - ((i + k) % 60 + 1) * interval '1 day' END,
       now() - interval '30 days', now() - interval '30 days',
       '10.' || (i / 65536) % 256 || '.' || (i / 256) % 256 || '.' || i % 256, 'scale-benchmark'
FROM generate_series(0, $1 - 1) AS i CROSS JOIN generate_series(0, 2) AS k
--split
-- The generic graph: friends i~i+1 (7 in 10), requests i->i+5 (1 in 4),
-- blocks i->i+11 (1 in 10): about two edges per player.
INSERT INTO social_edges (user_id, other_id, state, since)
SELECT md5('u' || a)::uuid, md5('u' || b)::uuid, 'friend', now() - ((i * 13) % 365) * interval '1 day' - (i % 86400) * interval '1 second'
FROM generate_series(1, $1 - 2) AS i, LATERAL (VALUES (i, i + 1), (i + 1, i)) AS e (a, b)
WHERE i % 10 < 7
--split
INSERT INTO social_edges (user_id, other_id, state, since)
SELECT md5('u' || e.a)::uuid, md5('u' || e.b)::uuid, e.state, now() - ((i * 17) % 90) * interval '1 day' - (i % 86400) * interval '1 second'
FROM generate_series(4, $1 - 6, 4) AS i, LATERAL (VALUES (i, i + 5, 'outgoing'), (i + 5, i, 'incoming')) AS e (a, b, state)
--split
INSERT INTO social_edges (user_id, other_id, state, since)
SELECT md5('u' || i)::uuid, md5('u' || (i + 11))::uuid, 'blocked', now() - ((i * 19) % 365) * interval '1 day'
FROM generate_series(10, $1 - 12, 10) AS i
--split
-- The heavy player 0: friends 100-299, incoming from 300-1299, outgoing to
-- 1300-1349, blocks 1350-1369.
INSERT INTO social_edges (user_id, other_id, state, since)
SELECT md5('u' || e.a)::uuid, md5('u' || e.b)::uuid, e.state, now() - (j % 400) * interval '1 hour' - j * interval '1 second'
FROM generate_series(100, 1369) AS j,
     LATERAL (SELECT CASE WHEN j < 300 THEN 'friend' WHEN j < 1300 THEN 'incoming' WHEN j < 1350 THEN 'outgoing' ELSE 'blocked' END AS mine) AS m,
     LATERAL (VALUES (0, j, m.mine),
                     (j, 0, CASE m.mine WHEN 'friend' THEN 'friend' WHEN 'incoming' THEN 'outgoing' WHEN 'outgoing' THEN 'incoming' END)) AS e (a, b, state)
WHERE e.state IS NOT NULL
--split
-- Open lobbies (3 per 1,000 players), hosted by players 2+333m, active in
-- the last 20 minutes; every third has a second member.
INSERT INTO lobbies (id, join_code, queue_id, visibility, status, host_id, capacity, member_count, created_at, updated_at, active_at)
SELECT md5('l' || m)::uuid, 'S' || lpad(upper(to_hex(m)), 5, '0'),
       CASE WHEN m % 2 = 0 THEN 'custom-hosted' ELSE 'casual-long' END,
       CASE WHEN m % 7 = 0 THEN 'private' WHEN m % 5 = 0 THEN 'friends' ELSE 'public' END,
       'open', md5('u' || (2 + 333 * m))::uuid,
       CASE WHEN m % 2 = 0 THEN 4 ELSE 2 END, CASE WHEN m % 3 = 0 THEN 2 ELSE 1 END,
       now() - (m % 1200) * interval '1 second', now() - (m % 1200) * interval '1 second', now() - (m % 1200) * interval '1 second'
FROM generate_series(0, $1 * 3 / 1000 - 1) AS m
WHERE 2 + 333 * m + 1 < $1
--split
INSERT INTO lobby_members (user_id, lobby_id, ready, joined_at)
SELECT md5('u' || (2 + 333 * m + x))::uuid, md5('l' || m)::uuid, x = 1, now() - (m % 1200) * interval '1 second' + x * interval '1 second'
FROM generate_series(0, $1 * 3 / 1000 - 1) AS m CROSS JOIN generate_series(0, 1) AS x
WHERE 2 + 333 * m + 1 < $1 AND (x = 0 OR m % 3 = 0)
--split
-- Closed lobbies (60 per 1,000 players) over the last 30 days.
INSERT INTO lobbies (id, join_code, queue_id, visibility, status, host_id, capacity, member_count, created_at, updated_at, active_at, closed_at, close_reason)
SELECT md5('c' || m)::uuid, NULL, 'custom-hosted', 'public', 'closed', md5('u' || ((m * 16) % $1))::uuid, 4, 0,
       now() - (m % 30) * interval '1 day' - interval '1 hour', now() - (m % 30) * interval '1 day',
       now() - (m % 30) * interval '1 day', now() - (m % 30) * interval '1 day', 'host-left'
FROM generate_series(0, $1 * 60 / 1000 - 1) AS m
--split
-- Sent mail (6 per 10 players), one in a hundred failed after three tries.
INSERT INTO mail_outbox (id, template, recipient, subject, payload, status, attempts, next_attempt_at, expires_at, last_error, created_at, updated_at, sent_at)
SELECT md5('m' || m)::uuid, 'verify-email', 'sp' || (m % $1) || '@scale.example.com', 'Confirm your email address', NULL,
       CASE WHEN m % 100 = 0 THEN 'failed' ELSE 'sent' END, CASE WHEN m % 100 = 0 THEN 3 ELSE 1 END,
       now() - (m % 60) * interval '1 day', now() - (m % 60) * interval '1 day' + interval '1 day',
       CASE WHEN m % 100 = 0 THEN '550 mailbox unavailable' ELSE '' END,
       now() - (m % 60) * interval '1 day', now() - (m % 60) * interval '1 day',
       CASE WHEN m % 100 = 0 THEN NULL ELSE now() - (m % 60) * interval '1 day' END
FROM generate_series(0, $1 * 6 / 10 - 1) AS m
--split
INSERT INTO mail_attempts (message_id, attempt, worker, started_at, finished_at, outcome, smtp_code, error)
SELECT md5('m' || m)::uuid, a, 'scale', now() - (m % 60) * interval '1 day', now() - (m % 60) * interval '1 day',
       CASE WHEN m % 100 <> 0 THEN 'sent' WHEN a < 3 THEN 'retry' ELSE 'failed' END,
       CASE WHEN m % 100 <> 0 THEN 250 WHEN a < 3 THEN 451 ELSE 550 END, ''
FROM generate_series(0, $1 * 6 / 10 - 1) AS m CROSS JOIN generate_series(1, 3) AS a
WHERE a = 1 OR m % 100 = 0
--split
INSERT INTO audit_log (at, actor, action, target, reason, details)
SELECT now() - (($1 - n) % 365) * interval '1 day' - (n % 86400) * interval '1 second', 'system', 'player.sign-up', 'sp' || (n % $1), '', '{}'
FROM generate_series(0, $1 - 1) AS n
