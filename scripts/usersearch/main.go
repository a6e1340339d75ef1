// Command usersearch measures the admin user search on a database built
// by scripts/scaledata (players sp<i>@scale.example.com, nicknames sp<i>):
// rounds of random email and nickname prefixes, first pages and next
// pages, against the exact email lookup of sign-in in the same rounds as
// the baseline. It prints p50 and p99 per kind and round and their medians.
//
//	go run ./scripts/usersearch -url postgres://…/pc_scale_large -players 1000000
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/store"
)

func main() {
	url := flag.String("url", "", "database URL of a scaledata database")
	players := flag.Int("players", 1_000_000, "players in the database")
	queries := flag.Int("queries", 2000, "queries per kind and round")
	rounds := flag.Int("rounds", 3, "rounds")
	flag.Parse()
	if err := run(context.Background(), *url, *players, *queries, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "usersearch:", err)
		os.Exit(1)
	}
}

type kind struct {
	name string
	call func(ctx context.Context, i int) error
}

func run(ctx context.Context, url string, players, queries, rounds int) error {
	db, err := store.OpenExisting(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	search, accounts := db.Admin(), db.Accounts()
	prefix := func(i int) string { // 3 to 7 characters of sp<i>
		s := "sp" + strconv.Itoa(i)
		return s[:min(len(s), 3+i%5)]
	}
	page := func(field, p, after string) error {
		_, err := search.SearchUsers(ctx, admin.Search{Field: field, Prefix: p, After: after, Limit: admin.DefaultPageSize + 1})
		return err
	}
	kinds := []kind{
		{"exact email (baseline)", func(ctx context.Context, i int) error {
			_, err := accounts.UserByEmail(ctx, account.RealmPlayer, "sp"+strconv.Itoa(i)+"@scale.example.com")
			return err
		}},
		{"email prefix", func(ctx context.Context, i int) error { return page(admin.FieldEmail, prefix(i), "") }},
		{"nickname prefix", func(ctx context.Context, i int) error { return page(admin.FieldNickname, prefix(i), "") }},
		{"nickname next page", func(ctx context.Context, i int) error {
			return page(admin.FieldNickname, prefix(i), "sp"+strconv.Itoa(i))
		}},
		{"no match", func(ctx context.Context, i int) error { return page(admin.FieldEmail, "zz"+strconv.Itoa(i), "") }},
	}
	p99s := make([][]time.Duration, len(kinds))
	p50s := make([][]time.Duration, len(kinds))
	for r := range rounds {
		for k, kd := range kinds {
			lat := make([]time.Duration, 0, queries)
			for range queries {
				i := rand.IntN(players)
				t0 := time.Now()
				if err := kd.call(ctx, i); err != nil {
					return fmt.Errorf("%s: %w", kd.name, err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
			p50s[k], p99s[k] = append(p50s[k], p50), append(p99s[k], p99)
			fmt.Printf("round %d  %-24s p50 %8s  p99 %8s\n", r+1, kd.name, p50.Round(time.Microsecond), p99.Round(time.Microsecond))
		}
	}
	fmt.Println()
	base := median(p99s[0])
	for k, kd := range kinds {
		m := median(p99s[k])
		fmt.Printf("median  %-24s p50 %8s  p99 %8s  p99/baseline %.2f\n", kd.name, median(p50s[k]).Round(time.Microsecond), m.Round(time.Microsecond), float64(m)/float64(base))
	}
	return nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
