# The posts service as an image. Build and run (docs/container-image.md says more):
#   docker build -t posts .
#   docker run -p 8080:8080 -v posts-data:/data posts
# The base is a build argument so that a machine without Docker Hub can build on a Node 20 image
# of its own (Debian bookworm, node and npm under /usr/local, a user "node", as the official one).
ARG BASE_IMAGE=node:20-bookworm-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /build
RUN npm install --global --no-audit --no-fund pnpm@10.34.9
COPY . .
# Every workspace dependency for the compiler, then the service alone with its production
# dependencies copied into /out: no compiler, test tool or source file goes further.
RUN pnpm install --frozen-lockfile \
  && pnpm exec tsc -b packages/app \
  && pnpm --filter @posts/app deploy --legacy --prod /out \
  && rm -rf /out/src /out/test /out/scripts /out/tsconfig.json

FROM ${BASE_IMAGE}
ENV NODE_ENV=production \
    DATA_DIR=/data
WORKDIR /app
COPY --from=build /out ./
# The embedded database and the signing key it generates live in DATA_DIR: a volume, writable by
# the unprivileged user the service runs as.
RUN mkdir -p /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 8080
# No curl in a slim image: node asks /ready, which answers 200 once the database answers.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT ?? 8080}/ready`).then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
# node itself is PID 1, so SIGTERM (docker stop) reaches the service's graceful shutdown: it stops
# accepting connections, finishes the requests in flight, closes the pool and exits 0.
# --max-semi-space-size=8 bounds V8's young generation, which only a flag at start can do
# (packages/app/README.md, Commands).
CMD ["node", "--max-semi-space-size=8", "dist/main.js"]
