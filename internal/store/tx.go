package store

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/role"
	"github.com/towerdefence/platformctl/internal/seed"
)

// Tx is the store's one query type. Its steps (insert a user, record an
// audit entry, enqueue mail, revoke sessions, take a mailed token, lock a
// lobby…) run on a bun.IDB: the database itself, or the bun.Tx of
// DB.InTx. It implements the Tx interface every service declares, so a
// service composes a use case from steps inside one transaction and the
// rule stays in the service. The player area's queries are the embedded
// playerQ; the other areas' steps are declared on Tx in their files.
type Tx struct {
	playerQ
}

// Every service's transaction is this one type.
var (
	_ auth.Tx    = Tx{}
	_ liveops.Tx = Tx{}
	_ mail.Tx    = Tx{}
	_ player.Tx  = Tx{}
	_ profile.Tx = Tx{}
	_ role.Tx    = Tx{}
	_ seed.Tx    = Tx{}
)

// on returns the steps running on idb.
func (db *DB) on(idb bun.IDB) Tx {
	return Tx{playerQ{idb: idb, rawQ: db.rawOn(sqlHandle(idb))}}
}

// postgres reports whether the steps run on PostgreSQL.
func (t Tx) postgres() bool { return t.dialect == Postgres }

// forUpdate locks the rows q reads until the transaction ends. SQLite
// needs no lock: its IMMEDIATE transactions already hold the write lock.
func (t Tx) forUpdate(q *bun.SelectQuery) *bun.SelectQuery {
	if t.postgres() {
		return q.For("UPDATE")
	}
	return q
}

// advisoryLock takes a transaction-scoped PostgreSQL advisory lock on key;
// on SQLite the IMMEDIATE transaction already excludes other writers.
func (t Tx) advisoryLock(ctx context.Context, key int64) error {
	if !t.postgres() {
		return nil
	}
	_, err := t.exec(ctx, "SELECT pg_advisory_xact_lock(?)", key)
	return err
}
