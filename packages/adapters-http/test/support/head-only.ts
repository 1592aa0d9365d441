import { connect } from "node:net";

/** Sends a request head with `Expect: 100-continue` and no body; answers what the server wrote within `ms`. */
export function headOnly(port: number, head: string, ms = 1000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(head));
    const chunks: Buffer[] = [];
    const finish = () => {
      socket.destroy();
      resolve(Buffer.concat(chunks).toString());
    };
    const timer = setTimeout(finish, ms);
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", () => {});
    socket.on("end", () => {
      clearTimeout(timer);
      finish();
    });
  });
}
