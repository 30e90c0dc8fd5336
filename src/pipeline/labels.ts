/**
 * The scene-label vocabulary shipped with the app: zero-shot labels are the entries whose text
 * embedding ("a photo of …") is closest to a shot's mean image embedding. Broad, everyday
 * concepts that people search video for; extend by adding lines (no retraining needed).
 */
export const SCENE_LABELS: readonly string[] = [
  // people and activities
  "person",
  "crowd",
  "child",
  "man",
  "woman",
  "face close-up",
  "people talking",
  "interview",
  "speech on stage",
  "people walking",
  "people dancing",
  "sports",
  "football",
  "basketball",
  "tennis",
  "swimming",
  "cycling",
  "running",
  "cooking",
  "eating",
  "meeting",
  "classroom",
  "concert",
  "wedding",
  "protest",
  // places
  "city street",
  "city skyline",
  "building",
  "office",
  "kitchen",
  "living room",
  "bedroom",
  "bathroom",
  "restaurant",
  "shop",
  "supermarket",
  "warehouse",
  "factory",
  "construction site",
  "hospital",
  "school",
  "church",
  "stadium",
  "airport",
  "train station",
  "parking lot",
  "road",
  "highway",
  "bridge",
  "tunnel",
  "park",
  "garden",
  "farm",
  "forest",
  "mountain",
  "desert",
  "beach",
  "ocean",
  "lake",
  "river",
  "waterfall",
  "snow",
  "field",
  "sky",
  "sunset",
  "night",
  "underwater",
  "space",
  // vehicles and things
  "car",
  "truck",
  "bus",
  "train",
  "airplane",
  "helicopter",
  "boat",
  "ship",
  "bicycle",
  "motorcycle",
  "traffic",
  "computer",
  "laptop",
  "phone",
  "screen",
  "television",
  "keyboard",
  "desk",
  "chair",
  "table",
  "book",
  "document",
  "whiteboard",
  "chart",
  "map",
  "text",
  "logo",
  "food",
  "drink",
  "fruit",
  "flower",
  "tree",
  "plant",
  "toy",
  "figurine",
  "clothing",
  "money",
  "tools",
  "machine",
  "fire",
  "smoke",
  "rain",
  "water",
  // animals
  "animal",
  "dog",
  "cat",
  "bird",
  "horse",
  "cow",
  "sheep",
  "fish",
  "insect",
  "bear",
  "rabbit",
  "frog",
  "elephant",
  // picture kinds
  "animation",
  "cartoon",
  "drawing",
  "black and white footage",
  "aerial view",
  "close-up",
  "crowd from above",
  "title card",
  "slide presentation",
  "video game",
  "news broadcast",
  "sports broadcast",
  "security camera footage",
];

export const labelPrompt = (label: string) => `a photo of ${/^[aeiou]/i.test(label) ? "an" : "a"} ${label}`;

/** CLIP's learned logit scale (100) turns cosine similarities into a softmax over labels. */
const LOGIT_SCALE = 100;

/** Top labels of one shot embedding against the label embeddings (all L2-normalised). */
export function zeroShotLabels(
  shot: Float32Array,
  labelVectors: Float32Array[],
  labels: readonly string[],
  opts: { top?: number; minProbability?: number } = {},
): { label: string; score: number }[] {
  const sims = labelVectors.map((v) => {
    let s = 0;
    for (let i = 0; i < v.length; i++) s += v[i] * shot[i];
    return s;
  });
  const max = Math.max(...sims);
  const exps = sims.map((s) => Math.exp(LOGIT_SCALE * (s - max)));
  const sum = exps.reduce((a, b) => a + b, 0);
  return exps
    .map((e, i) => ({ label: labels[i], score: Math.round((e / sum) * 1e4) / 1e4 }))
    .sort((a, b) => b.score - a.score)
    .slice(0, opts.top ?? 3)
    .filter((l) => l.score >= (opts.minProbability ?? 0.05));
}

export function meanVector(vectors: Float32Array[]): Float32Array | null {
  if (!vectors.length) return null;
  const out = new Float32Array(vectors[0].length);
  for (const v of vectors) for (let i = 0; i < v.length; i++) out[i] += v[i];
  let n = 0;
  for (let i = 0; i < out.length; i++) n += out[i] * out[i];
  n = Math.sqrt(n) || 1;
  for (let i = 0; i < out.length; i++) out[i] /= n;
  return out;
}
