package policy

import "context"

// DiscoveredTool returns a server's tool as discovery (or a response's
// listing) stored it; false when Toolgate has not seen the tool, or only
// knows its name from a policy.
func (s *Service) DiscoveredTool(ctx context.Context, label, name string) (DiscoveredTool, bool, error) {
	tools, err := s.store.Repo().Tools.List(ctx, label)
	if err != nil {
		return DiscoveredTool{}, false, err
	}
	for _, t := range tools {
		if t.Name == name && t.Discovered {
			return t.DiscoveredTool, true, nil
		}
	}
	return DiscoveredTool{}, false, nil
}
