package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/toolgate/toolgate/internal/client"
)

// signInUsers creates n member accounts through the admin's API and signs
// each in with a session of its own: one client (and cookie jar) per user,
// all sharing one pool of connections. Two at a time: each creation and
// each sign-in hashes a password (argon2id, 19 MiB).
func signInUsers(ctx context.Context, admin *client.Client, n int) ([]*client.Client, error) {
	shared := newClient()
	users := make([]*client.Client, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			users[i], errs[i] = signInUser(ctx, admin, shared, i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return users, nil
}

func signInUser(ctx context.Context, admin *client.Client, shared *http.Client, i int) (*client.Client, error) {
	email, password := fmt.Sprintf("user%03d-%s@bench.toolgate.test", i, randHex(3)), "bench user password "+randHex(8)
	if err := admin.JSON(ctx, http.MethodPost, "/api/users",
		map[string]string{"email": email, "password": password, "role": "member"}, nil); err != nil {
		return nil, fmt.Errorf("create user %d: %w", i, err)
	}
	c, err := client.New(admin.Base(), "")
	if err != nil {
		return nil, err
	}
	c.HTTP.Transport, c.HTTP.Timeout = shared.Transport, shared.Timeout
	if err := c.Login(ctx, email, password); err != nil {
		return nil, fmt.Errorf("sign in user %d: %w", i, err)
	}
	return c, nil
}
