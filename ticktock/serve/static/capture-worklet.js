// TickTock's capture worklet: the microphone, at the AudioContext's rate, as PCM16 mono at 16 kHz.
// Each input sample goes through a windowed-sinc low-pass (cut below the 8 kHz Nyquist of the output, so nothing
// above it folds back), then the output samples are read off the filtered stream by linear interpolation. Frames
// of `frameSamples` (100 ms) are posted to the page as Int16Array buffers. While muted it posts silence, in time,
// so the server's units keep coming; the page mutes and unmutes it with {muted: true|false}.

const TAPS = 63; // odd: a symmetric filter with a whole-sample delay

function lowPass(cutoff) {
  // cutoff: a fraction of the input rate (0 .. 0.5); a Blackman-windowed sinc, normalised to unit gain at DC
  const taps = new Float32Array(TAPS), middle = (TAPS - 1) / 2;
  let sum = 0;
  for (let i = 0; i < TAPS; i++) {
    const x = i - middle;
    const sinc = x === 0 ? 2 * cutoff : Math.sin(2 * Math.PI * cutoff * x) / (Math.PI * x);
    const phase = (2 * Math.PI * i) / (TAPS - 1);
    const blackman = 0.42 - 0.5 * Math.cos(phase) + 0.08 * Math.cos(2 * phase);
    taps[i] = sinc * blackman;
    sum += taps[i];
  }
  return taps.map((t) => t / sum);
}

class CaptureProcessor extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const { targetRate = 16000, frameSamples = 1600 } = options.processorOptions || {};
    this.step = sampleRate / targetRate; // input samples per output sample
    // no filter when not downsampling; else cut at 0.45 of the output rate (7.2 kHz for 16 kHz)
    this.taps = this.step > 1 ? lowPass((0.45 * targetRate) / sampleRate) : null;
    this.history = new Float32Array(TAPS); // the last TAPS input samples, a ring
    this.at = 0; // where the next input sample goes in the ring
    this.previous = 0; // the filtered sample before the current one
    this.index = 0; // the filtered stream's index of the current sample
    this.next = 0; // the fractional index of the next output sample on the filtered stream
    this.frameSamples = frameSamples;
    this.frame = new Int16Array(frameSamples);
    this.filled = 0;
    this.muted = false;
    this.port.onmessage = (event) => { this.muted = Boolean(event.data.muted); };
  }

  filtered(sample) {
    this.history[this.at] = sample;
    this.at = (this.at + 1) % TAPS;
    if (!this.taps) return sample;
    let acc = 0;
    for (let i = 0; i < TAPS; i++) acc += this.taps[i] * this.history[(this.at + i) % TAPS];
    return acc;
  }

  emit(value) {
    const clipped = Math.max(-1, Math.min(1, value));
    this.frame[this.filled++] = Math.round(clipped * 32767);
    if (this.filled === this.frameSamples) {
      const full = this.frame;
      this.port.postMessage(full, [full.buffer]); // transferred: `full` is empty after this
      this.frame = new Int16Array(this.frameSamples);
      this.filled = 0;
    }
  }

  process(inputs) {
    const channels = inputs[0];
    const length = channels && channels.length ? channels[0].length : 128; // no input yet: a quantum of silence
    for (let n = 0; n < length; n++) {
      let sample = 0;
      if (!this.muted && channels && channels.length) {
        for (const channel of channels) sample += channel[n];
        sample /= channels.length; // mono: the channels' mean
      }
      const current = this.filtered(sample);
      // output samples between the previous filtered sample (index - 1) and this one (index)
      while (this.next <= this.index) {
        const frac = this.next - (this.index - 1);
        this.emit(this.previous + (current - this.previous) * frac);
        this.next += this.step;
      }
      this.previous = current;
      this.index += 1;
    }
    return true;
  }
}

registerProcessor("ticktock-capture", CaptureProcessor);
