/**
 * A Vega-Lite specification as an SVG document, rendered by Vega in Node: no browser and no
 * canvas, since Vega writes SVG itself. Shared by the soak's memory chart and the bench's charts.
 */
import * as vega from "vega";
import { compile, type TopLevelSpec } from "vega-lite";

/**
 * The SVG document Vega draws for `spec`. Vega-Lite's warnings go to stderr, but for those that
 * start with one of `expectedWarnings`: a chart that knows why one does not apply to it says so
 * there, so that a run's output keeps only the warnings worth reading.
 */
export async function svgOf(spec: TopLevelSpec, expectedWarnings: readonly string[] = []): Promise<string> {
  const logger = vega.logger(vega.Warn);
  const warn = logger.warn.bind(logger);
  logger.warn = (...args: readonly unknown[]) => {
    const message = String(args[0] ?? "");
    return expectedWarnings.some((expected) => message.startsWith(expected)) ? logger : warn(...args);
  };
  const view = new vega.View(vega.parse(compile(spec, { logger }).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
