# syntax=docker/dockerfile:1
# newsletter-bff on Node, as a container. Two stages: the first compiles TypeScript with the
# dev dependencies; the image keeps only the production dependencies and the compiled dist/.
# .ci/container-recipe.sh runs these same steps outside Docker, so CI proves the recipe.
ARG NODE_VERSION=24

FROM node:${NODE_VERSION}-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# A BuildKit cache mount: npm's cache speeds rebuilds and never lands in a layer.
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:${NODE_VERSION}-slim AS runtime
# HOST 0.0.0.0: reachable through the container's published port (the default is loopback only).
# ADMIN_PORT: the admin listener (/healthz, /readyz, /metrics), which HEALTHCHECK asks.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8787 \
    ADMIN_PORT=9090
WORKDIR /app
COPY package.json package-lock.json ./
# The four core packages and the optional extras for ADMIN_PORT (prom-client, which HEALTHCHECK
# needs), REDIS_URL (@redis/client) and SUBSCRIBE_BLOCK_DISPOSABLE (mailchecker); add
# --omit=optional for the core alone (docs/dependencies.md). The site builder's sanitize-html is
# not needed here.
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --ignore-scripts --no-audit --no-fund
COPY --from=build /app/dist ./dist
# The example site, served only in demo mode (NODE_ENV other than production, no key).
COPY examples/site ./examples/site
COPY openapi.json LICENSE README.md ./
# The image's own `node` user (uid 1000): the service never needs root.
USER node
EXPOSE 8787 9090
# Node's own fetch: the slim image has no curl.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.ADMIN_PORT + '/healthz', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Configuration comes from the environment: NEWSLETTER_API_KEY (a secret), NEWSLETTER_API_BASE_URL,
# ALLOWED_ORIGINS, … (README.md "Configuration"). A bad value exits 2 with one line each.
CMD ["node", "dist/cli.js", "start"]
