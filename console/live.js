// The tab's one event follower (events.js), fed by GET /v1/events with the caller's token. A view's subscription
// ends when the view is left (app.js calls leaveView on every address change); an upload's lasts until its file is
// done, as the upload list outlives its view. The follower stops asking while the tab is hidden and delivers what
// happened meanwhile when it is shown again; signing out forgets its cursor.

import { get } from "./api.js";
import { EventFollower, eventsPath } from "./events.js";

// The stream's state on the page (<html data-event-stream>), for a person's devtools and the browser test.
const follower = new EventFollower({
  fetchPage: (request) => get(eventsPath(request)),
  onState: (state) => (document.documentElement.dataset.eventStream = state),
});
const viewSubscriptions = new Set();

let watchingVisibility = false;

// On first use, so that the module loads without a DOM (node's unit tests import the route table).
function watchVisibility() {
  if (watchingVisibility) return;
  watchingVisibility = true;
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") follower.pause();
    else follower.resume();
  });
  if (document.visibilityState === "hidden") follower.pause();
}

/** Follow file events until the returned function is called, or (`view: true`) until the view is left. */
export function follow(subscriber, { view = true } = {}) {
  watchVisibility();
  const unsubscribe = follower.subscribe(subscriber);
  if (!view) return unsubscribe;
  const ended = () => {
    viewSubscriptions.delete(ended);
    unsubscribe();
  };
  viewSubscriptions.add(ended);
  return ended;
}

/** Is the stream answering? False once a request failed, until it is tried again. */
export const streaming = () => follower.available;

export function leaveView() {
  for (const ended of [...viewSubscriptions]) ended();
}

export function forgetEvents() {
  viewSubscriptions.clear();
  follower.reset();
}
