/** A `close()` that destroys `db` on the first call and answers the same promise afterwards. */
export function closeOnce(db: { destroy(): Promise<void> }): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= db.destroy();
    return closing;
  };
}
