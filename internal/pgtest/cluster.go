package pgtest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
)

// errStopped answers DB and URL after Stop.
var errStopped = errors.New("pgtest: Stop was called")

// cluster is the server the process's databases are made on: one it started
// (local), or the one LEASEQ_POSTGRES_URL names.
type cluster struct {
	base  *url.URL // a database on the server; databaseURL swaps the name
	admin *sql.DB  // on base: CREATE and DROP DATABASE
	local *server  // nil for LEASEQ_POSTGRES_URL's server

	seq   atomic.Int64
	drops sync.WaitGroup
	dropN chan struct{} // one DROP DATABASE at a time
}

// startCluster connects to LEASEQ_POSTGRES_URL's server, or starts one from
// the newest installed binaries; noServer says there is neither.
func startCluster() (c *cluster, noServer bool, err error) {
	if u := os.Getenv(envURL); u != "" {
		c, err := connect(u, nil)
		return c, false, err
	}
	bin := newestBinaries()
	if bin == "" {
		return nil, true, nil
	}
	s, err := startServer(bin)
	if err != nil {
		return nil, false, err
	}
	if c, err = connect(s.url("postgres"), s); err != nil {
		return nil, false, errors.Join(err, s.stop())
	}
	return c, false, nil
}

// connect opens the admin pool on the server at rawURL.
func connect(rawURL string, local *server) (*cluster, error) {
	base, err := url.Parse(rawURL)
	if err != nil || (base.Scheme != "postgres" && base.Scheme != "postgresql") {
		return nil, fmt.Errorf("%s: want a postgres:// URL, got %q", envURL, rawURL)
	}
	admin, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, err
	}
	if err := admin.Ping(); err != nil {
		admin.Close()
		return nil, fmt.Errorf("connecting to %s: %w", base.Redacted(), err)
	}
	return &cluster{base: base, admin: admin, local: local, dropN: make(chan struct{}, 1)}, nil
}

// createDatabase creates an empty database with a name no other test, and
// no other process sharing the server, uses. From template0: nothing added
// to template1 on a shared server leaks in, and nobody is ever connected to
// it, which CREATE DATABASE would refuse.
func (c *cluster) createDatabase() (string, error) {
	suffix := make([]byte, 3)
	rand.Read(suffix)
	name := fmt.Sprintf("leaseq_test_%d_%d_%s", os.Getpid(), c.seq.Add(1), hex.EncodeToString(suffix))
	if _, err := c.admin.Exec("CREATE DATABASE " + name + " TEMPLATE template0 ENCODING 'UTF8'"); err != nil {
		return "", fmt.Errorf("CREATE DATABASE %s: %w", name, err)
	}
	return name, nil
}

// databaseURL is base with the database name swapped.
func (c *cluster) databaseURL(name string) string {
	u := *c.base
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

// dropLater drops the database name in the background, one at a time: a
// drop takes tens of milliseconds that the test need not wait for, and it
// keeps the cluster's disk from growing with every test. WITH (FORCE) ends
// the connections a test left open.
func (c *cluster) dropLater(name string) {
	c.drops.Add(1)
	go func() {
		defer c.drops.Done()
		c.dropN <- struct{}{}
		defer func() { <-c.dropN }()
		c.admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
	}()
}

// stop stops the local server and removes its files; on a server named by
// LEASEQ_POSTGRES_URL it waits for the pending drops instead, so that no
// database of this process is left there.
func (c *cluster) stop() error {
	if c.local == nil {
		c.drops.Wait()
		return c.admin.Close()
	}
	c.admin.Close()
	return c.local.stop()
}

// localPort is the port of the server this process started, 0 for none.
func (c *cluster) localPort() int {
	if c.local == nil {
		return 0
	}
	return c.local.port
}
