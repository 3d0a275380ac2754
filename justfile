# hindsight task runner. Every recipe is a plain cargo command you can run without `just`.

# `.env` (from `.env.example`, for docker compose) also gives `eval-pg` the compose database's login.
set dotenv-load

# Run the evaluation on every shipped dataset and write reports/ (fetches the model on first use).
eval *ARGS:
    cargo run -p hindsight-lab -- eval {{ARGS}}

# Run the test suite (tests needing the model skip loudly when it is absent).
test:
    cargo test --workspace

# What CI runs: formatting, lints, tests with the model required, quick eval + regression gate.
ci:
    bash .ci/run

# Fetch the embedding model (all-MiniLM-L6-v2) into $HINDSIGHT_HOME/models when missing.
model:
    cargo run -p hindsight-cli -- model ensure

# Quick eval (the CI subset) of every dataset and the regression gate against reports/baseline/.
gate:
    cargo run -p hindsight-lab -- --document-precision f32 --query-precision int8 eval --quick --out target/eval-quick
    cargo run -p hindsight-lab -- gate --baseline reports/baseline --current target/eval-quick

# Re-baseline the gate from a fresh quick eval (commit the diff deliberately).
rebaseline:
    cargo run -p hindsight-lab -- --document-precision f32 --query-precision int8 eval --quick --out target/eval-quick
    cargo run -p hindsight-lab -- baseline update --from target/eval-quick --to reports/baseline

# Regenerate the shipped dataset (deterministic; the output is committed).
dataset seed="42":
    cargo run -p hindsight-lab -- dataset generate --seed {{seed}} --out datasets/retrieval/agent-memory-bilingual

# The load report: release build, a store pre-filled to N memories, the MCP server over it, the
# load harness (reports/load/; the next `just eval` shows it). Same as `scripts/load-report N`.
load n="100000" *ARGS:
    scripts/load-report {{n}} reports/load {{ARGS}}

# Criterion benchmarks (speed targets live here, never in unit tests).
bench:
    cargo bench -p hindsight-bench

# Start the throwaway test services (PostgreSQL 18 + pgvector from PyPI, Redis from Debian) on 127.0.0.1.
services:
    scripts/pg-test-server start
    scripts/redis-test-server start

# Stop them.
services-stop:
    scripts/pg-test-server stop
    scripts/redis-test-server stop

# The MCP server over streamable HTTP on 127.0.0.1:8080 with the example bearer tokens
# (config/tokens.example.toml). `just serve --auth-config FILE` for your tokens, `just serve --no-auth`
# for none (local benchmarks only); the server refuses to start with neither.
serve *ARGS="--auth-config config/tokens.example.toml":
    cargo run -p hindsight-cli -- serve --http 127.0.0.1:8080 {{ARGS}}

# Rebuild the committed guard model (crates/hindsight-guard/model/classifier.json) from the training
# and validation splits of datasets/guard/manifest.toml (real dialogues from ../shared/realdata when present).
guard-models:
    cargo run -p hindsight-lab -- guard train

# Guard: catch rates and false positives on every labelled set of datasets/guard/manifest.toml.
guard-eval:
    cargo run -p hindsight-lab -- guard eval

# The docker-compose stack (needs a Docker engine): PostgreSQL+pgvector, Redis, Qdrant, the MCP server.
up:
    docker compose up -d --build

# Evaluate against the compose PostgreSQL, with the user, password, port and database from `.env`
# (or any server: PG_URL=postgres://... just eval-pg).
eval-pg url=env_var_or_default("PG_URL", "postgres://" + env_var_or_default("POSTGRES_USER", "hindsight") + ":" + env_var_or_default("POSTGRES_PASSWORD", "") + "@127.0.0.1:" + env_var_or_default("POSTGRES_PORT", "5432") + "/" + env_var_or_default("POSTGRES_DB", "hindsight")):
    @echo "eval against {{replace_regex(url, ':[^:@/]*@', ':***@')}}"
    @cargo run -p hindsight-lab -- eval --backend '{{url}}' --out reports/backend-postgres

# Evaluate against the compose Qdrant (gRPC port 6334).
eval-qdrant url=env_var_or_default("QDRANT_URL", "qdrant://127.0.0.1:6334"):
    cargo run -p hindsight-lab -- eval --backend {{url}} --out reports/backend-qdrant
