package agent

import (
	"slices"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"
)

// For any sequence of config layers (files, then flags), the merged
// config holds, for each scalar, the last layer's non-empty value; the
// client's servers are every layer's servers in order, each once; the
// server_join list is the last non-empty one; and a role once enabled
// stays enabled. These are upstream's merge rules, which operators' config
// directories rely on.
func TestConfig_MergeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		addr := rapid.SampledFrom([]string{"10.0.0.1:4647", "10.0.0.2:4647", "10.0.0.3:4647"})
		layers := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) *Config {
			return &Config{
				Region: rapid.SampledFrom([]string{"", "eu", "us"}).Draw(t, "region"),
				Server: &ServerConfig{
					Enabled:         rapid.Bool().Draw(t, "server"),
					BootstrapExpect: rapid.IntRange(0, 5).Draw(t, "expect"),
					JobGCThreshold:  time.Duration(rapid.IntRange(0, 3).Draw(t, "jobgc")) * time.Hour,
					ServerJoin:      &ServerJoin{RetryJoin: rapid.SliceOfN(addr, 0, 2).Draw(t, "join")},
				},
				Client: &ClientConfig{
					Servers: rapid.SliceOfN(addr, 0, 3).Draw(t, "servers"),
					Meta:    rapid.MapOfN(rapid.SampledFrom([]string{"a", "b"}), rapid.SampledFrom([]string{"1", "2"}), 0, 2).Draw(t, "meta"),
				},
			}
		}), 1, 6).Draw(t, "layers")

		got := DefaultConfig()
		wantRegion, wantExpect, wantJobGC := "global", 0, DefaultJobGCThreshold
		var wantServers, wantJoin []string
		wantEnabled := false
		wantMeta := map[string]string{}
		for _, l := range layers {
			got = got.Merge(l)
			if l.Region != "" {
				wantRegion = l.Region
			}
			if l.Server.BootstrapExpect != 0 {
				wantExpect = l.Server.BootstrapExpect
			}
			if l.Server.JobGCThreshold != 0 {
				wantJobGC = l.Server.JobGCThreshold
			}
			if len(l.Server.ServerJoin.RetryJoin) > 0 {
				wantJoin = l.Server.ServerJoin.RetryJoin
			}
			wantEnabled = wantEnabled || l.Server.Enabled
			for _, s := range l.Client.Servers {
				if !slices.Contains(wantServers, s) {
					wantServers = append(wantServers, s)
				}
			}
			for k, v := range l.Client.Meta {
				wantMeta[k] = v
			}
		}
		must.Eq(t, wantRegion, got.Region)
		must.Eq(t, wantExpect, got.Server.BootstrapExpect)
		must.Eq(t, wantJobGC, got.Server.JobGCThreshold)
		must.Eq(t, wantJoin, got.Server.ServerJoin.RetryJoin)
		must.Eq(t, wantEnabled, got.Server.Enabled)
		must.Eq(t, wantServers, got.Client.Servers)
		if len(wantMeta) == 0 {
			wantMeta = nil
		}
		must.Eq(t, wantMeta, got.Client.Meta)
	})
}
