// The wire shapes the app's tests read from the real service, as docs/posts.md and
// docs/change-events.md state them.

/** A post in the wire format (docs/posts.md#a-post-on-the-wire). */
export interface PostJson {
  readonly id: number;
  readonly title: string;
  readonly content: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly user: { readonly id: number; readonly email: string };
}

/** A change event as the feed and the stream carry it (docs/change-events.md#the-events). */
export interface CloudEvent {
  readonly specversion: string;
  readonly id: string;
  readonly source: string;
  readonly type: "post.created" | "post.updated" | "post.deleted";
  readonly subject: string;
  readonly time: string;
  readonly datacontenttype: string;
  readonly data: Record<string, unknown>;
}
