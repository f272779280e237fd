package config

import (
	"strings"
	"testing"
	"time"
)

func TestLoad_ReplicaSettings(t *testing.T) {
	got, err := Load(env(map[string]string{"REPLICA_ID": "api-2", "TURN_LEASE_TTL": "3s"}))
	if err != nil {
		t.Fatal(err)
	}
	if got.Replica.ID != "api-2" || got.Replica.LeaseTTL != 3*time.Second {
		t.Errorf("replica %+v; want api-2 with a 3s lease", got.Replica)
	}
	for _, bad := range []map[string]string{{"TURN_LEASE_TTL": "45s"}, {"TURN_LEASE_TTL": "500ms"}, {"TURN_LEASE_TTL": "15"}, {"REPLICA_ID": "a b"}} {
		_, err := Load(env(bad))
		for k := range bad {
			if err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("%v: %v; want an error naming %s", bad, err, k)
			}
		}
	}
}
