# switchboard in a container (docs/deploy.md). Two stages: the release binary is built in Rust's
# image, then copied into a small Debian image where it runs as a user without privileges, its
# state dir a volume. Linted by hadolint in .ci/run.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p switchboard-cli \
    && install -D -m 0755 target/release/switchboard /out/switchboard

FROM debian:bookworm-slim
# ca-certificates: the providers' and channels' TLS roots. Left unpinned on purpose: each
# rebuild takes Debian's security updates.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin switchboard \
    && mkdir -p /data \
    && chown switchboard:switchboard /data \
    && chmod 0700 /data
COPY --from=build /out/switchboard /usr/local/bin/switchboard
USER 10001:10001
ENV SWITCHBOARD_HOME=/data
VOLUME ["/data"]
EXPOSE 18790
# `switchboard health` finds the gateway and its token in the state dir, and exits 1 when the
# gateway is not well (its store unreachable).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s CMD ["switchboard", "health"]
ENTRYPOINT ["switchboard"]
CMD ["gateway", "--bind", "lan"]
