export {
  natsServerAvailable,
  natsServerForTests,
  startNatsServer,
  type TestNatsServer,
} from "./nats-server.js";
export { readStream, type StreamMessage } from "./read-stream.js";
