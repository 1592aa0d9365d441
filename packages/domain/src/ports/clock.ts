/** The source of the current time, a port so that tests can hold time still or move it. */
export interface Clock {
  /** The current instant. Successive calls may return equal or even earlier instants. */
  now(): Date;
}

/** The real clock. */
export const systemClock: Clock = { now: () => new Date() };
