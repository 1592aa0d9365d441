/**
 * The soak's memory over time as an SVG chart: RSS, the V8 heap in use (garbage included), the
 * heap after forced full collections, what the post cache reported holding, and that heap net of
 * the cache, with a rule where each PostgreSQL restart began. A Vega-Lite specification rendered
 * by Vega in Node (see chart/vega-svg.ts).
 */
import type { TopLevelSpec } from "vega-lite";
import { svgOf } from "../chart/vega-svg.js";
import type { CollectedHeapReading, MemorySample, RestartTimes } from "./soak-analysis.js";

/** What the chart is drawn from: the series a soak run keeps in its JSON file. */
export interface MemorySeries {
  readonly rssSamples: readonly MemorySample[];
  readonly heapSamples: readonly MemorySample[];
  readonly collectedHeap: readonly CollectedHeapReading[];
  readonly restartTimes: readonly RestartTimes[];
}

const MIB = 2 ** 20;
/** Points per sampled series at most: a line of an hour sampled every second is thinned to this. */
const MAX_POINTS = 720;

function thinned<T>(values: readonly T[]): readonly T[] {
  const every = Math.ceil(values.length / MAX_POINTS);
  return every <= 1 ? values : values.filter((_, index) => index % every === 0);
}

/** The chart of `series` as an SVG document, `title` above it. */
export async function memoryChartSvg(series: MemorySeries, title: string): Promise<string> {
  const from = [...series.rssSamples, ...series.heapSamples, ...series.collectedHeap].reduce(
    (first, sample) => Math.min(first, sample.at),
    Number.POSITIVE_INFINITY,
  );
  const minutes = (at: number) => (at - from) / 60_000;
  const line = (name: string, points: readonly { at: number; bytes: number }[]) =>
    thinned(points.filter((point) => point.bytes > 0)).map((point) => ({
      series: name,
      minute: minutes(point.at),
      mib: point.bytes / MIB,
    }));
  const collected = series.collectedHeap.filter((reading) => reading.heapBytes > 0);
  const values = [
    ...line("RSS", series.rssSamples),
    ...line("heap in use (garbage included)", series.heapSamples),
    ...line(
      "heap after full collections",
      collected.map((reading) => ({ at: reading.at, bytes: reading.heapBytes })),
    ),
    ...line(
      "post cache (as it reports)",
      collected.map((reading) => ({ at: reading.at, bytes: reading.cacheBytes })),
    ),
    ...line(
      "heap after full collections − post cache",
      collected.map((reading) => ({ at: reading.at, bytes: reading.heapBytes - reading.cacheBytes })),
    ),
  ];
  const restarts = {
    data: { values: series.restartTimes.map((restart) => ({ minute: minutes(restart.stopAt) })) },
    mark: { type: "rule" as const, strokeDash: [4, 4], color: "#888" },
    encoding: { x: { field: "minute", type: "quantitative" as const } },
  };
  const panel = (names: readonly string[], colors: readonly string[], yTitle: string) => ({
    width: 760,
    height: 220,
    layer: [
      {
        data: { values: values.filter((value) => names.includes(value.series)) },
        mark: { type: "line" as const, strokeWidth: 1.5 },
        encoding: {
          x: { field: "minute", type: "quantitative" as const, title: "minutes into the load" },
          y: { field: "mib", type: "quantitative" as const, title: yTitle },
          color: {
            field: "series",
            type: "nominal" as const,
            scale: { domain: [...names], range: [...colors] },
            legend: { orient: "right" as const, title: null, labelLimit: 400 },
          },
        },
      },
      restarts,
    ],
  });
  const spec: TopLevelSpec = {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: { text: title, subtitle: "dashed: a PostgreSQL restart began" },
    background: "white",
    vconcat: [
      panel(["RSS"], ["#4c78a8"], "RSS, MiB"),
      panel(
        [
          "heap in use (garbage included)",
          "heap after full collections",
          "heap after full collections − post cache",
          "post cache (as it reports)",
        ],
        ["#bab0ac", "#e45756", "#54a24b", "#f58518"],
        "V8 heap, MiB",
      ),
    ],
    resolve: { scale: { color: "independent" } },
  };
  return svgOf(spec);
}
