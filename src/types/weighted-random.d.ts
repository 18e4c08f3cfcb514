declare module 'weighted-random' {
  /** Index picked with probability weight/sum(weights); -1 when every weight is 0. */
  export default function weightedRandom(weights: readonly number[]): number;
}
