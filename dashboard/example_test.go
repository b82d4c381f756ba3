package dashboard_test

import (
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/dashboard"
)

// requireOperator is the service's own authentication, here HTTP basic
// auth against one operator account. The dashboard has no login of its
// own; whatever guards the service's admin pages guards it too.
func requireOperator(user, password string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="operators"`)
			http.Error(w, "operators only", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// The dashboard mounted in a service's own mux under /admin/queue/, behind
// the service's authentication, with the Requeue and Cancel buttons on.
// http.StripPrefix removes the prefix without its trailing slash, so the
// dashboard sees "/" for its overview; its links are relative, so they stay
// under the prefix.
func Example() {
	dir, err := os.MkdirTemp("", "leaseq-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := leaseq.Open(filepath.Join(dir, "jobs.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	q, err := leaseq.New(ctx, db, leaseq.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	if err := q.Enqueue(ctx, leaseq.Job{ID: "order-7"}); err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.Handle("/admin/queue/", requireOperator("ops", "correct horse",
		http.StripPrefix("/admin/queue", dashboard.New(q, dashboard.Options{AllowWrites: true}))))
	srv := httptest.NewServer(mux) // in a service: http.ListenAndServe(addr, mux)
	defer srv.Close()

	for _, login := range []bool{false, true} {
		req, _ := http.NewRequest("GET", srv.URL+"/admin/queue/", nil)
		if login {
			req.SetBasicAuth("ops", "correct horse")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.Status, strings.Contains(string(body), `<a href="jobs?queue=default&amp;status=pending">1</a>`))
	}
	// Output:
	// 401 Unauthorized false
	// 200 OK true
}
