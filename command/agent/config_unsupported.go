package agent

// Upstream's agent config keys that this version cannot honour, with a
// hint where one helps. They are refused by name ("vault is not supported by
// this version") rather than as unknown keys, so an operator bringing an
// upstream config learns that the setting exists and does nothing here,
// instead of hunting for a typo. Keys neither here nor implemented are
// reported as unknown, with HCL's "did you mean" suggestion.

var unsupportedTopLevel = map[string]string{
	"audit":                     "",
	"consul":                    "there is no Consul integration",
	"enable_syslog":             "logs go to standard error and log_file",
	"http_api_response_headers": "",
	"keyring":                   "",
	"plugin_dir":                "only the built-in drivers exist",
	"reporting":                 "",
	"sentinel":                  "",
	"syslog_facility":           "",
	"ui":                        "there is no web UI",
}

// unsupportedVault are the keys of upstream's vault block: the block is
// accepted only as a disabled integration (enabled = false, or nothing
// set), which is what this version has.
var unsupportedVault = map[string]string{
	"address":               vaultHint,
	"allow_unauthenticated": vaultHint,
	"ca_file":               vaultHint,
	"ca_path":               vaultHint,
	"cert_file":             vaultHint,
	"create_from_role":      vaultHint,
	"jwt_auth_backend_path": vaultHint,
	"key_file":              vaultHint,
	"name":                  vaultHint,
	"namespace":             vaultHint,
	"task_token_ttl":        vaultHint,
	"tls_server_name":       vaultHint,
	"tls_skip_verify":       vaultHint,
	"token":                 vaultHint,
}

const vaultHint = "there is no Vault integration; only vault { enabled = false } is accepted"

var unsupportedServer = map[string]string{
	"acl_token_gc_threshold":        "",
	"batch_eval_gc_threshold":       "",
	"csi_plugin_gc_threshold":       "",
	"csi_volume_claim_gc_interval":  "",
	"csi_volume_claim_gc_threshold": "",
	"default_scheduler_config":      "",
	"enable_event_broker":           "",
	"enabled_schedulers":            "",
	"job_default_priority":          "",
	"job_gc_interval":               "",
	"job_max_priority":              "",
	"job_max_source_size":           "",
	"job_tracked_versions":          "",
	"license_path":                  "",
	"non_voting_server":             "",
	"oidc_issuer":                   "",
	"plan_rejection_tracker":        "",
	"protocol_version":              "",
	"raft_boltdb":                   "",
	"redundancy_zone":               "",
	"rejoin_after_leave":            "",
	"root_key_gc_interval":          "",
	"root_key_gc_threshold":         "",
	"root_key_rotation_threshold":   "",
	"start_timeout":                 "",
	"upgrade_version":               "",
}

var unsupportedTLS = map[string]string{
	"rpc_upgrade_mode":                "a server with tls.rpc refuses plaintext at once; upgrade every agent together",
	"tls_cipher_suites":               "Go's default cipher suites are used",
	"tls_prefer_server_cipher_suites": "",
}

var unsupportedACL = map[string]string{
	"token_ttl":                "tokens are read from the servers' state on every request",
	"policy_ttl":               "policies are read from the servers' state on every request",
	"role_ttl":                 "there are no ACL roles",
	"token_min_expiration_ttl": "token expirations are bounded by upstream's defaults, 1m to 24h",
	"token_max_expiration_ttl": "token expirations are bounded by upstream's defaults, 1m to 24h",
}

var unsupportedClient = map[string]string{
	"alloc_dir":                  "allocations live under <data_dir>/alloc",
	"alloc_mounts_dir":           "",
	"bridge_network_subnet_ipv6": "bridge mode allocations get IPv4 addresses only",
	"cgroup_parent":              "",
	"cpu_disable_dmidecode":      "",
	"disable_remote_exec":        "",
	"disk_free_mb":               "",
	"disk_total_mb":              "",
	"drain_on_shutdown":          "",
	"gc_volumes_on_node_gc":      "it deletes dynamic host volumes (upstream 1.10), which this version does not have; upstream 1.6.5 rejects it too",
	"host_volumes_dir":           "",
	"network_speed":              "",
	"no_host_uuid":               "",
	"nomad_service_discovery":    "",
	"preferred_address_family":   "",
	"reservable_cores":           "",
	"state_dir":                  "the client's state lives under <data_dir>/client",
}
