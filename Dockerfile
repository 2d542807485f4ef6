# One image for every dlock service; the service is chosen at run time by APP
# (lock-server, payment-resource, rail-proxy, executor, rail-stub, reconciler, console).
# Migrations run from the same image with another command (docs/operations.md).

ARG NODE_IMAGE=node:20.20-bookworm-slim

# --- deps: production dependencies only. Optional packages are left out: the
# only one is the embedded PostgreSQL used by `npm start`, never in a container.
# Install scripts are off: no production dependency needs one at run time.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

# --- build: full toolchain, one tsc pass into dist/ (scripts/build.js).
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY scripts ./scripts
COPY libs ./libs
COPY apps ./apps
COPY migrations ./migrations
COPY bench ./bench
RUN npm run build

# --- runtime: no compiler, no dev dependencies, not root.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --chown=root:root package.json ./
COPY --chown=root:root --chmod=0755 deploy/docker/entrypoint.sh /usr/local/bin/dlock-entrypoint
# Compose's `identity` volume (the development issuer's keys and tokens) is mounted here: a
# new named volume takes the ownership of the image's directory, so the app (uid 1000) can
# write it. Without the directory Docker makes the volume root's and the issuer gets EACCES.
RUN mkdir /identity && chown 1000:1000 /identity
ARG APP=lock-server
ENV APP=${APP}
# uid/gid 1000 is the image's `node` user; numeric so runAsNonRoot can verify it.
USER 1000:1000
ENTRYPOINT ["/usr/local/bin/dlock-entrypoint"]
# No CMD: without arguments the entrypoint starts dist/apps/${APP}/main.js.
