// TickTock's talk page: one full-duplex session over WS /v1/realtime?duplex=1 (the server's origin).
// Talk is a toggle: the first press opens the session (microphone, AudioContext, WebSocket); while Talk is on the
// microphone streams, while it is off the worklet streams silence, because the model decides every 1000 ms unit
// whether to listen or speak and needs the audio to keep flowing. Audio goes up as base64 PCM16 at 16 kHz, 100 ms
// per input_audio_buffer.append; the talker's speech comes back as base64 PCM16 at each delta's sample_rate_hz and
// is played back to back. Per unit a row: decision, post-audio latency, draft accepted, deadline miss.
// ?autostart=1 presses Talk on load where the browser lets a page start audio by itself; where it wants a click first
// (an AudioContext needs a user gesture: most browsers, by default), the page says so and Talk starts it.
// ?aec=0 turns the browser's echo cancellation off. Hang up ends the session as the server's contract has it:
// session.close, then the server's session.closed (or the socket's close) ends it here.
// window.ticktock is a read-only status for tests: {state, unitsShown, appendsSent, playedSeconds, errors,
// serverErrors, medianMs}; state is idle, needs-gesture, starting, connecting, live, closing or closed.

const INPUT_RATE = 16000;
const FRAME_SAMPLES = 1600; // 100 ms at 16 kHz per append
const AUTOSTART_WAIT_MS = 1000; // how long autostart waits for the browser to let audio start without a click
const CLOSE_WAIT_MS = 5000; // how long Hang up waits for session.closed before it closes the socket itself
const params = new URLSearchParams(location.search);

const $ = (id) => document.getElementById(id);
const ui = { talk: $("talk"), hangup: $("hangup"), state: $("state"), median: $("median"), transcript: $("transcript"),
  units: $("units"), errors: $("errors") };

const status = { state: "idle", unitsShown: 0, appendsSent: 0, playedSeconds: 0, errors: [], serverErrors: [] };
const latencies = [];
window.ticktock = Object.freeze({
  get state() { return status.state; },
  get unitsShown() { return status.unitsShown; },
  get appendsSent() { return status.appendsSent; },
  get playedSeconds() { return status.playedSeconds; },
  get errors() { return status.errors.slice(); },
  get serverErrors() { return status.serverErrors.slice(); },
  get medianMs() { return median(latencies); },
});

function pageError(message) {
  status.errors.push(message);
  showError(`page: ${message}`);
}
window.addEventListener("error", (e) => pageError(String(e.message || e.error)));
window.addEventListener("unhandledrejection", (e) => pageError(String(e.reason && e.reason.message || e.reason)));

let session = null; // {ws, context, stream, worklet, nextPlay, responses}
let talking = false;
let pending = null; // an AudioContext made on load (?autostart=1) that waits for a click to start

function setState(state, text) {
  status.state = state;
  ui.state.textContent = text;
}

function showError(text) {
  const li = document.createElement("li");
  li.textContent = text;
  ui.errors.append(li);
}

// ------------------------------------------------------------------------------------------ the session

async function open() {
  setState("starting", "Starting: microphone and audio...");
  const context = pending || new AudioContext({ latencyHint: "interactive" });
  pending = null;
  await context.resume(); // (in a click's handler: the browser lets it start)
  await context.audioWorklet.addModule("/static/capture-worklet.js");
  const aec = params.get("aec") !== "0";
  const stream = await navigator.mediaDevices.getUserMedia({
    audio: { channelCount: 1, echoCancellation: aec, noiseSuppression: false, autoGainControl: false },
  });
  const worklet = new AudioWorkletNode(context, "ticktock-capture", {
    numberOfInputs: 1, numberOfOutputs: 1, outputChannelCount: [1],
    processorOptions: { targetRate: INPUT_RATE, frameSamples: FRAME_SAMPLES },
  });
  worklet.port.postMessage({ muted: !talking });
  worklet.onprocessorerror = () => pageError("the capture worklet failed");
  context.createMediaStreamSource(stream).connect(worklet);
  worklet.connect(context.destination); // (it outputs silence; connected so the graph pulls it)

  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${scheme}//${location.host}/v1/realtime?duplex=1`);
  const current = { ws, context, stream, worklet, nextPlay: 0, responses: new Map() };
  session = current;
  ws.onopen = () => {
    send(current, { type: "session.update", session: { sample_rate_hz: INPUT_RATE, input_audio_format: "pcm16" } });
    setState("connecting", "Connected; waiting for the session...");
  };
  ws.onmessage = (message) => receive(current, JSON.parse(message.data));
  ws.onclose = (e) => {
    if (session === current) close(`Disconnected${e.reason ? `: ${e.reason}` : ""}.`);
  };
  worklet.port.onmessage = (e) => append(current, e.data);
  ui.hangup.disabled = false;
}

function send(current, event) {
  if (current.ws.readyState === WebSocket.OPEN) current.ws.send(JSON.stringify(event));
}

function append(current, frame) {
  if (current.ws.readyState !== WebSocket.OPEN) return; // before the socket opens: dropped
  // (an Int16Array's bytes are little-endian, PCM16's order, on every platform a browser runs on)
  send(current, { type: "input_audio_buffer.append", audio: base64(new Uint8Array(frame.buffer)) });
  status.appendsSent += 1;
}

function close(text) {
  const current = session;
  session = null;
  talking = false;
  ui.talk.setAttribute("aria-pressed", "false");
  ui.talk.textContent = "Talk";
  ui.hangup.disabled = true;
  setState("closed", text);
  if (!current) return;
  current.worklet.port.onmessage = null;
  current.stream.getTracks().forEach((track) => track.stop());
  if (current.ws.readyState <= WebSocket.OPEN) current.ws.close(1000);
  setTimeout(() => current.context.close(), Math.max(0, current.nextPlay - current.context.currentTime) * 1000 + 500);
}

async function toggleTalk() {
  talking = !talking;
  ui.talk.setAttribute("aria-pressed", String(talking));
  ui.talk.textContent = talking ? "Talking (press to mute)" : "Talk";
  if (!session) {
    ui.talk.disabled = true;
    try {
      await open();
    } catch (err) {
      pageError(`could not start: ${err && err.message || err}`);
      close("Could not start.");
      return;
    } finally {
      ui.talk.disabled = false;
    }
  }
  session.worklet.port.postMessage({ muted: !talking });
  if (status.state === "live") setState("live", talking ? "Live: talking." : "Live: muted (silence is streamed).");
}

// -------------------------------------------------------------------------------------- server events

function receive(current, event) {
  switch (event.type) {
    case "session.created":
    case "session.updated":
      setState("live", talking ? "Live: talking." : "Live: muted (silence is streamed).");
      break;
    case "response.listen":
    case "response.speak":
      if (event.ticktock) showUnit(event.type === "response.speak" ? "speak" : "listen", event.ticktock);
      break;
    case "response.created":
      response(current, event.response_id);
      break;
    case "response.output_text.delta":
      response(current, event.response_id).text += event.delta;
      showText(current, event.response_id);
      break;
    case "response.output_audio_transcript.delta":
      response(current, event.response_id).transcript += event.delta;
      showText(current, event.response_id);
      break;
    case "response.output_audio.delta":
      play(current, event.delta, event.sample_rate_hz);
      break;
    case "error": {
      const error = event.error || {};
      status.serverErrors.push({ code: error.code, message: error.message });
      showError(`server: ${error.code}: ${error.message}`);
      break;
    }
    case "session.closed":
      close(`Session closed (${event.reason}).`);
      break;
    default: // response.done, heartbeats, function calls: nothing to show
  }
}

function response(current, id) {
  if (!current.responses.has(id)) {
    const p = document.createElement("p");
    ui.transcript.append(p);
    current.responses.set(id, { p, text: "", transcript: "" });
  }
  return current.responses.get(id);
}

function showText(current, id) {
  const r = current.responses.get(id);
  r.p.textContent = r.transcript || r.text; // the speech's transcript; the text when there is no speech
  ui.transcript.scrollTop = ui.transcript.scrollHeight;
}

function showUnit(decision, t) {
  const row = document.createElement("tr");
  row.className = decision + (t.deadline_miss ? " miss" : "");
  const yesNo = (value) => (value === null || value === undefined ? "" : value ? "yes" : "no");
  const latency = typeof t.post_audio_ms === "number" ? t.post_audio_ms.toFixed(1) : "";
  for (const [name, text] of [["unit", t.unit], ["decision", decision], ["latency", latency],
    ["draft", yesNo(t.draft_accepted)], ["miss", yesNo(t.deadline_miss)]]) {
    const cell = document.createElement("td");
    cell.className = name;
    cell.textContent = text;
    row.append(cell);
  }
  ui.units.append(row);
  row.scrollIntoView({ block: "nearest" });
  if (typeof t.post_audio_ms === "number") latencies.push(t.post_audio_ms);
  const m = median(latencies);
  ui.median.textContent = m === null ? "-" : m.toFixed(1);
  status.unitsShown += 1;
}

function median(values) {
  if (!values.length) return null;
  const sorted = values.slice().sort((a, b) => a - b), mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// ------------------------------------------------------------------------------------------ audio out

function play(current, b64, rate) {
  const bytes = unbase64(b64);
  const pcm = new DataView(bytes.buffer);
  const count = bytes.length >> 1;
  if (!count || !rate) return;
  const buffer = current.context.createBuffer(1, count, rate);
  const samples = buffer.getChannelData(0);
  for (let i = 0; i < count; i++) samples[i] = pcm.getInt16(2 * i, true) / 32768;
  const source = current.context.createBufferSource();
  source.buffer = buffer;
  source.connect(current.context.destination);
  const start = Math.max(current.nextPlay, current.context.currentTime + 0.05); // back to back, or soon
  source.start(start);
  current.nextPlay = start + buffer.duration;
  source.onended = () => { status.playedSeconds += buffer.duration; };
}

// ------------------------------------------------------------------------------------------ base64

function base64(bytes) {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

function unbase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

// ------------------------------------------------------------------------------------------ controls

// Autostart: a page may start audio by itself only where the browser allows it; elsewhere an AudioContext stays
// suspended until a click, and awaiting its resume() would hang. Ask, wait a moment, and otherwise say what to do.
async function autostart() {
  const context = new AudioContext({ latencyHint: "interactive" });
  if (context.state !== "running") {
    await Promise.race([context.resume(), new Promise((done) => setTimeout(done, AUTOSTART_WAIT_MS))]);
  }
  if (context.state === "running") {
    pending = context;
    toggleTalk();
    return;
  }
  pending = context; // resumed by the click on Talk
  ui.talk.textContent = "Start (click to allow audio)";
  ui.talk.classList.add("needs-gesture");
  setState("needs-gesture", "This browser starts audio only after a click: press Start to begin the session.");
}

function hangUp() {
  const current = session;
  if (!current || status.state === "closing") return;
  send(current, { type: "session.close" }); // the server answers session.closed and closes the socket
  setState("closing", "Hanging up...");
  current.worklet.port.postMessage({ muted: true });
  setTimeout(() => { if (session === current) close("Hung up."); }, CLOSE_WAIT_MS);
}

ui.talk.addEventListener("click", () => {
  ui.talk.classList.remove("needs-gesture");
  toggleTalk();
});
ui.hangup.addEventListener("click", hangUp);
if (params.get("autostart") === "1") autostart();
