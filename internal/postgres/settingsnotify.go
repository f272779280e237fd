package postgres

import (
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/policy"
)

// SettingsChannel carries the settings changes policy_version does not
// cover (00042_settings_notify.sql): "personal <user_id>", "card",
// "decision_hook", "webhook" or "server".
const SettingsChannel = "toolgate_settings"

// SettingsChange reads a notification on PolicyChannel or SettingsChannel
// as the settings change it says; ok is false for other channels and
// payloads it does not know.
func SettingsChange(channel string, payload []byte) (policy.Change, bool) {
	p := string(payload)
	switch channel {
	case PolicyChannel:
		v, err := strconv.ParseInt(p, 10, 64)
		return policy.Change{Kind: policy.ChangeWorkspace, Version: v}, err == nil
	case SettingsChannel:
		if user, ok := strings.CutPrefix(p, "personal "); ok {
			return policy.Change{Kind: policy.ChangePersonal, UserID: user}, user != ""
		}
		switch k := policy.ChangeKind(p); k {
		case policy.ChangeCard, policy.ChangeDecisionHook, policy.ChangeWebhook, policy.ChangeServer:
			return policy.Change{Kind: k}, true
		}
	}
	return policy.Change{}, false
}
