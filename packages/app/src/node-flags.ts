/**
 * The flags `node` runs the service with: `pnpm start`, the container image's command and the
 * bench pass exactly these before `dist/main.js`, and an operator who starts it another way
 * should too.
 *
 * `--max-semi-space-size=8` bounds V8's young generation at two semi-spaces of 8 MB instead of
 * 16. Under load the young generation grows to its bound and stays there, so the bound is resident
 * memory the process holds for nothing but faster scavenges: at 8 MB a scavenge still finds
 * almost everything of a request dead, and the process holds 15–20 MB less. V8 sizes the young
 * generation when it starts, so unlike the service's other V8 settings (set from the running
 * process, see `boundHeapGrowth`) this one can only be a flag of the command line or of
 * `NODE_OPTIONS`.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=8"];
