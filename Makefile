# The two commands: `make run` starts Toolgate on this machine, `make test`
# runs every test. Both are thin wrappers around scripts/ so CI and people
# run exactly the same thing. `make build` builds the web app and then
# bin/toolgate, the one binary with the app embedded and its version stamped
# (scripts/build.sh), plus bin/demo-mcp and bin/emulator. `make bench`
# measures Toolgate beside a plain Go proxy (scripts/bench.sh; minutes, not
# part of `make test`).
.PHONY: run test build bench

run:
	./scripts/run.sh

test:
	./scripts/test.sh

build:
	./scripts/web.sh
	./scripts/build.sh

bench:
	./scripts/bench.sh
