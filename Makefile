# The two commands: `make run` starts Toolgate on this machine, `make test`
# runs every test. Both are thin wrappers around scripts/ so CI and people
# run exactly the same thing.
.PHONY: run test build

run:
	./scripts/run.sh

test:
	./scripts/test.sh

build:
	go build -o bin/ ./cmd/...
