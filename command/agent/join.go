package agent

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// addresses returns the per-listener bind addresses, never nil.
func (c *Config) addresses() *Addresses {
	if c.Addresses == nil {
		return &Addresses{}
	}
	return c.Addresses
}

// listenIP is the address a listener binds: its own `addresses` entry, or
// bind_addr. Both were checked to be IP addresses when the config loaded.
func listenIP(addr string, bind net.IP) net.IP {
	if ip := net.ParseIP(addr); ip != nil {
		return ip
	}
	return bind
}

// defaultAdvertiseIP picks the address to advertise when the agent binds
// 0.0.0.0: the first private (else any global) IPv4 address of the host,
// as upstream does.
func defaultAdvertiseIP() (net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing interface addresses: %w", err)
	}
	var global net.IP
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.To4() == nil || ipn.IP.IsLoopback() {
			continue
		}
		if ipn.IP.IsPrivate() {
			return ipn.IP, nil
		}
		if global == nil && ipn.IP.IsGlobalUnicast() {
			global = ipn.IP
		}
	}
	if global != nil {
		return global, nil
	}
	return nil, errors.New("bind_addr is 0.0.0.0 and the host has no IPv4 address to advertise; set advertise { rpc serf }")
}

// serfJoinAddr adds the default serf port to a join address without one.
func serfJoinAddr(a string) string {
	if _, _, err := net.SplitHostPort(a); err == nil {
		return a
	}
	return net.JoinHostPort(a, strconv.Itoa(DefaultSerfPort))
}

// startJoin joins the servers of server_join.start_join (the agent fails
// when none answers) and starts retrying server_join.retry_join in the
// background.
func (a *Agent) startJoin() error {
	sj := a.config.Server.ServerJoin
	if sj == nil {
		return nil
	}
	if len(sj.StartJoin) > 0 {
		addrs := make([]string, len(sj.StartJoin))
		for i, s := range sj.StartJoin {
			addrs[i] = serfJoinAddr(s)
		}
		n, err := a.server.Join(addrs)
		if n == 0 {
			return fmt.Errorf("server_join.start_join: no server answered at %v: %w", addrs, err)
		}
		a.logger.Info("joined servers", "count", n)
	}
	if len(sj.RetryJoin) > 0 {
		a.wg.Add(1)
		go func() { defer a.wg.Done(); a.retryJoin(sj) }()
	}
	return nil
}

// retryJoin tries the retry_join addresses every retry_interval until one
// answers or retry_max attempts have failed, logging each failure once.
func (a *Agent) retryJoin(sj *ServerJoin) {
	addrs := make([]string, len(sj.RetryJoin))
	for i, s := range sj.RetryJoin {
		addrs[i] = serfJoinAddr(s)
	}
	interval := sj.RetryInterval
	if interval <= 0 {
		interval = 30 * time.Second
	}
	for attempt := 1; ; attempt++ {
		n, err := a.server.Join(addrs)
		if n > 0 {
			a.logger.Info("retry_join: joined servers", "count", n, "attempt", attempt)
			return
		}
		if sj.RetryMax > 0 && attempt >= sj.RetryMax {
			a.logger.Error("retry_join: giving up", "attempts", attempt, "addresses", addrs, "error", err)
			return
		}
		a.logger.Info("retry_join: no server answered; retrying", "addresses", addrs, "error", err, "retry_in", interval)
		select {
		case <-time.After(interval):
		case <-a.stopCh:
			return
		}
	}
}

// Leave leaves the cluster gracefully: the server leaves the gossip pool,
// so the leader removes it from raft at once rather than waiting for it to
// be found dead.
func (a *Agent) Leave() error {
	if a.server == nil {
		return nil
	}
	return a.server.Leave()
}
