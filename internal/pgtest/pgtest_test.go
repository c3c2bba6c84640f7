package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func query(t *testing.T, conn string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Two tests' databases are apart, and a table written is read back.
func TestSharedDatabasesAreApart(t *testing.T) {
	a, b := DB(t), DB(t)
	if a == b {
		t.Fatal("two databases with one connection string")
	}
	for i, conn := range []string{a, b} {
		c, err := pgx.Connect(context.Background(), conn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(context.Background(), "CREATE TABLE t (x int)"); err != nil {
			t.Fatal(err)
		}
		for range i + 1 {
			if _, err := c.Exec(context.Background(), "INSERT INTO t VALUES (1)"); err != nil {
				t.Fatal(err)
			}
		}
		c.Close(context.Background())
	}
	if query(t, a) != 1 || query(t, b) != 2 {
		t.Fatal("the databases share rows")
	}
}

// A server stopped refuses connections; started again it has its data.
func TestStopStart(t *testing.T) {
	s := NewServer(t)
	conn := s.NewDB(t)
	if err := s.Exec(context.Background(), "postgres", "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	c, _ := pgx.Connect(context.Background(), conn)
	c.Exec(context.Background(), "CREATE TABLE t (x int); INSERT INTO t VALUES (1)")
	c.Close(context.Background())
	s.Stop(t)
	if _, err := pgx.Connect(context.Background(), conn); err == nil {
		t.Fatal("connected to a stopped server")
	}
	s.Start(t)
	if n := query(t, conn); n != 1 {
		t.Fatalf("after a restart: %d rows", n)
	}
	// A wrong password is refused (TCP is not trusted).
	good := s.Password
	s.Password = "wrong"
	_, err := pgx.Connect(context.Background(), s.ConnString("postgres"))
	s.Password = good
	if err == nil {
		t.Fatal("a wrong password was accepted")
	}
}
