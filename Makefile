# The two commands: `make run` starts Toolgate on this machine, `make test`
# runs every test. Both are thin wrappers around scripts/ so CI and people
# run exactly the same thing. `make build` builds the web app and then
# bin/toolgate, the one binary with the app embedded and its version stamped
# (scripts/build.sh), plus bin/demo-mcp and bin/emulator.
.PHONY: run test build

run:
	./scripts/run.sh

test:
	./scripts/test.sh

build:
	./scripts/web.sh
	./scripts/build.sh
