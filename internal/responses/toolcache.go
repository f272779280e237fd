package responses

import (
	"maps"
	"sync"

	"github.com/toolgate/toolgate/internal/policy"
)

// toolCache keeps each entry's JSON (what follows its server_label) from
// one request to the next, with everything it was rendered from: the
// server's URL, description and headers, and the names of its groups in
// their order. An entry whose group is the same is not rendered again; one
// whose group changed (a policy, a personal policy, a grant, a tool the
// conversation turned off) is, and replaces it.
//
// Groups are the same when their lists are the very slices the entry was
// rendered from (the policy snapshot's, which every turn shares and nobody
// changes in place: policy.ServerTools), checked in constant time; the
// cache holds them, so their memory cannot be reused for other lists while
// it does. Other lists (a new snapshot after a policy change, a group
// made for one person) are compared name by name, and when they are the
// same the entry takes them as its own.
type toolCache struct {
	mu      sync.Mutex
	frags   map[fragKey]*cachedFrag
	renders uint64 // requests rendered so far
}

// fragKey is an entry of a server: one per server in the default layout,
// two in the split layout.
type fragKey struct {
	server string
	kind   entryKind
}

type cachedFrag struct {
	url, description string
	headers          map[string]string
	offerUnknown     bool
	viaFace          bool                    // rendered for the face: without server_url and headers
	never, always    []string                // the group's names, in its order
	lists            [2][]policy.GroupedTool // the group's Never and Always it was last found the same as
	json             []byte                  // never changed once cached
	used             uint64                  // the last render that used it
}

// keepFrags is how many renders an entry unused stays cached once the cache
// holds more entries than twice those of the last request.
const keepFrags = 16

func newToolCache() *toolCache { return &toolCache{frags: map[fragKey]*cachedFrag{}} }

// begin starts a render.
func (c *toolCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.renders++
	return c.renders
}

// end ends the render n of entries entries: entries of servers no longer
// rendered are dropped.
func (c *toolCache) end(n uint64, entries int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.frags) <= 2*entries+256 {
		return
	}
	for k, f := range c.frags {
		if f.used+keepFrags < n {
			delete(c.frags, k)
		}
	}
}

// frag returns the JSON of e (not custom) in render n: the cached one when
// e's group is the one it was rendered from (and for the face when viaFace).
func (c *toolCache) frag(e *entry, n uint64, viaFace bool) []byte {
	k := fragKey{e.g.Server.Label, e.kind}
	c.mu.Lock()
	f := c.frags[k]
	if f != nil {
		f.used = n
	}
	c.mu.Unlock()
	g := e.g
	if f != nil && f.viaFace == viaFace && f.server(g) {
		if sameSlice(g.Never, f.lists[0]) && sameSlice(g.Always, f.lists[1]) {
			return f.json
		}
		if sameNames(g.Never, f.never) && sameNames(g.Always, f.always) {
			c.put(k, &cachedFrag{url: f.url, description: f.description, headers: f.headers, offerUnknown: f.offerUnknown, viaFace: viaFace,
				never: f.never, always: f.always, lists: [2][]policy.GroupedTool{g.Never, g.Always}, json: f.json, used: n})
			return f.json
		}
	}
	e.materialize()
	f = &cachedFrag{url: g.Server.URL, description: g.Server.Description, headers: maps.Clone(g.Server.Headers),
		offerUnknown: g.OfferUnknown, viaFace: viaFace, never: inOrder(g.Never), always: inOrder(g.Always),
		lists: [2][]policy.GroupedTool{g.Never, g.Always}, json: e.appendFrag(make([]byte, 0, e.fragSize()), viaFace), used: n}
	c.put(k, f)
	return f.json
}

func (c *toolCache) put(k fragKey, f *cachedFrag) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frags[k] = f
}

// server reports whether f was rendered for g's server as it is, with
// unknown tools offered or not as g says.
func (f *cachedFrag) server(g *policy.ServerTools) bool {
	return f.url == g.Server.URL && f.description == g.Server.Description && f.offerUnknown == g.OfferUnknown &&
		maps.Equal(f.headers, g.Server.Headers)
}

// sameSlice reports whether a and b are the same slice: the same elements
// in the same memory.
func sameSlice(a, b []policy.GroupedTool) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func sameNames(tools []policy.GroupedTool, names []string) bool {
	if len(tools) != len(names) {
		return false
	}
	for i := range tools {
		if tools[i].Name != names[i] {
			return false
		}
	}
	return true
}

// inOrder is the tools' names in their order.
func inOrder(tools []policy.GroupedTool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}
