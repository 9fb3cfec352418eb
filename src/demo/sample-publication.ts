/**
 * The embedded sample publication behind demo mode: "The Field Notes", a weekly
 * newsletter about growing food in small city spaces.
 *
 * Records use the newsletter service's own field names and include everything a
 * real workspace would hold, not just what a public site may show: drafts,
 * scheduled and private issues, failed and in-flight sends, and one malformed
 * record. The demo therefore exercises the same filtering as production.
 */

/** A category record as the newsletter service stores it (upstream field names). */
export interface DemoCategory {
  id: string;
  workspaceId: string;
  accountSetId: string;
  name: string;
  slug: string;
  createdAt: string;
  updatedAt: string;
}

/** Delivery statistics the newsletter service attaches to each issue. */
export interface DemoIssueStats {
  newSubscriberCount: number;
  subscriberCountTargeted: number;
  sentCount: number;
  deliveredCount: number;
  openedCount: number;
  clickedCount: number;
  bouncedCount: number;
  complainedCount: number;
  failedCount: number;
}

/** An issue record as the newsletter service stores it (upstream field names). */
export interface DemoIssue {
  id: string;
  slug: string | null;
  workspaceId: string;
  accountSetId: string;
  subject: string;
  previewText: string | null;
  thumbnailUrl: string | null;
  contentHtml: string | null;
  contentJson: unknown;
  scheduledFor: string | null;
  audience: unknown;
  status: 'draft' | 'sending' | 'sent' | 'failed';
  isPublic: boolean;
  category: DemoCategory | null;
  categories: DemoCategory[];
  stats: DemoIssueStats;
  createdBy: string;
  sentAt: string | null;
  createdAt: string;
  updatedAt: string;
}

/** The workspace every demo record belongs to. */
export const DEMO_WORKSPACE_ID = 'ws_demo_7f3a';

/** The account set every demo record belongs to. */
export const DEMO_ACCOUNT_SET_ID = '3b9d2c4e-8f1a-4c6b-9e2d-5a7f0c1b8e34';

type CategoryKey = 'guides' | 'interviews' | 'community' | 'tools';
type UnnumberedIssue = Omit<DemoIssue, 'id'>;

interface Entry {
  subject: string;
  category: CategoryKey | null;
  previewText: string | null;
  /** Three short phrases the content templates weave into the body. */
  focus: readonly [string, string, string];
  /** A person, place or aside, depending on the template. */
  featuring: string;
  quote?: string;
  hasThumbnail?: false;
  /** Defaults to everyone; `null` mirrors issues the service stored without an audience. */
  audience?: Record<string, string> | null;
}

const EDITOR = 'user_demo_editor';
const SITE = 'https://fieldnotes.example.com';
/**
 * The demo's default public origin (`npm start` and `npm run dev:worker`: 127.0.0.1 port 8787).
 * Demo mode serves examples/site there, and so its thumbnails/ folder of small SVGs. A thumbnail
 * must be an absolute http(s) URL to reach a page at all (the service drops anything else), so
 * the Node entry passes the origin it really listens on (createDemoUpstream's `siteOrigin`).
 */
export const DEFAULT_DEMO_ORIGIN = 'http://127.0.0.1:8787';
/** The sample publication's name: demo mode's PUBLICATION_NAME. */
export const DEMO_PUBLICATION_NAME = 'The Field Notes';
const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;
const WEEK_MS = 7 * DAY_MS;
const LAST_SEND_MS = Date.UTC(2026, 10, 15, 9, 0, 0);

// Listed out of alphabetical order on purpose, so a consumer that sorts is observable.
const CATEGORY_SEEDS: readonly { key: CategoryKey; id: string; name: string; slug: string; createdAt: string }[] = [
  { key: 'guides', id: 'cat_01', name: 'Seasonal Guides', slug: 'seasonal-guides', createdAt: '2025-11-03T10:00:00.000Z' },
  { key: 'interviews', id: 'cat_02', name: 'Interviews', slug: 'interviews', createdAt: '2025-11-03T10:05:00.000Z' },
  { key: 'community', id: 'cat_03', name: 'Community', slug: 'community', createdAt: '2025-11-10T14:30:00.000Z' },
  { key: 'tools', id: 'cat_04', name: 'Tools & Tech', slug: 'tools-and-tech', createdAt: '2025-12-01T08:45:00.000Z' },
];

// Entry 25 goes out the same morning as entry 24, so consumers must break ties deterministically.
const TIE_INDEX = 25;

// In send order, oldest first; sentAt is derived from the position (weekly, Sundays 09:00 UTC).
const ENTRIES: readonly Entry[] = [
  {
    subject: 'A Year of Small Plots',
    category: null,
    previewText: 'Why we started writing, and what is coming this year.',
    focus: ['borrowed corners', 'shared tools', 'patient neighbours'],
    featuring: 'We began with two pots of basil and a stubborn fig.',
  },
  {
    subject: 'Seed Catalogues Worth Reading in January',
    category: 'guides',
    previewText: 'Cold evenings are for circling varieties in pencil.',
    focus: ['compact tomatoes', 'cut-and-come-again lettuce', 'dwarf beans'],
    featuring: 'Order early: the small seed houses sell out by March.',
  },
  {
    subject: 'Meet the Rooftop Beekeepers of Eastside',
    category: 'interviews',
    previewText: 'Six hives, nine floors up, and a lot of borage.',
    focus: ['spare veils', 'a smoker that behaves', 'borage seed'],
    featuring: 'Dana Reyes, who keeps bees above a printworks',
    quote: 'The bees taught me to notice every flowering weed on the block.',
  },
  {
    subject: 'Choosing a Grow Light Without the Jargon',
    category: 'tools',
    previewText: 'Lumens, spectrums and what actually matters for seedlings.',
    focus: ['a full-spectrum LED bar', 'a plug-in timer', 'a reflective board'],
    featuring: 'Most seedlings need fourteen hours of light, not a greenhouse budget.',
  },
  {
    subject: 'The Winter Seed Swap at Hollis Library',
    category: 'community',
    previewText: 'Bring an envelope, leave with a summer.',
    focus: ['heirloom peppers', 'saved marigold seed', 'mystery squash'],
    featuring: 'Hollis Library on Grove Street',
  },
  {
    subject: 'Starting Onions and Leeks Indoors',
    category: 'guides',
    previewText: 'The slowest crops start first.',
    focus: ['deep modules', 'a haircut for the seedlings', 'gentle bottom heat'],
    featuring: 'Alliums take their time, so give them a head start now.',
  },
  {
    subject: 'A Chef Who Cooks From the Balcony',
    category: 'interviews',
    previewText: 'A tasting menu grown in twelve containers.',
    focus: ['nasturtium leaves', 'lemon verbena', 'pea shoots'],
    featuring: 'Tomasz Nowak, chef at a twelve-seat bistro',
    quote: "If it grows within arm's reach of the stove, it goes on the menu.",
  },
  {
    subject: 'Soil Thermometers, Tested',
    category: 'tools',
    previewText: null,
    focus: ['a dial probe', 'a digital spike', 'a cheap aquarium stick-on'],
    featuring: 'Sow when the soil is ready, not when the calendar says so.',
  },
  {
    subject: 'What to Sow in March',
    category: 'guides',
    previewText: 'Peas, broad beans and a first row of radishes.',
    focus: ['early peas', 'broad beans', 'radishes'],
    featuring: 'March rewards the gardener who checks the forecast daily.',
  },
  {
    subject: 'Building a Raised Bed on a Budget',
    category: 'tools',
    previewText: 'Reclaimed boards, a drill and one Saturday.',
    focus: ['reclaimed scaffold boards', 'corner posts', 'cardboard lining'],
    featuring: 'A sturdy bed costs less than a month of supermarket salad.',
  },
  {
    subject: 'Volunteer Day at Canal Street Orchard',
    category: 'community',
    previewText: 'Forty volunteers, sixty trees, one very large urn of tea.',
    focus: ['mulching rings', 'new fence posts', 'pruning lessons'],
    featuring: 'Canal Street Orchard',
  },
  {
    subject: 'The Compost Whisperer of Block 9',
    category: 'interviews',
    previewText: "Turning a courtyard's scraps into black gold.",
    focus: ['a three-bay system', 'shredded cardboard', 'a long fork'],
    featuring: 'Ines Duarte, caretaker of a housing co-op courtyard',
    quote: 'Compost is just patience you can hold in your hands.',
  },
  {
    subject: 'Hardening Off Seedlings, Step by Step',
    category: 'guides',
    previewText: 'A week of short outings before the big move.',
    focus: ['sheltered mornings', 'longer afternoons', 'a first night outdoors'],
    featuring: 'Pampered seedlings sulk; toughened ones thrive.',
  },
  {
    subject: 'Rain Barrels and the Art of Catching Water',
    category: 'tools',
    previewText: 'Every downpipe is a free water supply.',
    focus: ['a diverter kit', 'a lidded barrel', 'a bottom tap'],
    featuring: 'A single storm can fill two hundred litres.',
  },
  {
    subject: 'Spring Planting Festival Recap',
    category: 'community',
    previewText: 'Photos, thank-yous and the seedling raffle winners.',
    focus: ['the seedling raffle', "a kids' planting table", 'the tool library stall'],
    featuring: 'Marlowe Park',
  },
  {
    subject: 'Herbs That Thrive in Window Boxes',
    category: 'guides',
    previewText: 'Thyme, chives and the case for mint in its own pot.',
    focus: ['creeping thyme', 'chives', 'mint in its own pot'],
    featuring: 'A window box is the smallest garden with the biggest payoff.',
  },
  {
    subject: 'Talking Trees With a City Arborist',
    category: 'interviews',
    previewText: 'Which street trees feed us, and which ones shade us.',
    focus: ['mulberries', 'street-side pears', 'planting pits'],
    featuring: 'Samuel Adeyemi, arborist for the parks department',
    quote: 'A street tree is the hardest-working resident on any block.',
  },
  {
    subject: 'Drip Irrigation for Balconies',
    category: 'tools',
    previewText: 'Set it up once, go on holiday guilt-free.',
    focus: ['a tap timer', 'quarter-inch line', 'adjustable drippers'],
    featuring: 'Drip lines use a fraction of the water a can does.',
  },
  {
    subject: 'Tomatoes: Staking, Caging, and Patience',
    category: 'guides',
    previewText: 'Pick a support now and thank yourself in August.',
    focus: ['bamboo stakes', 'spiral supports', 'soft ties'],
    featuring: 'Cordon or bush, every tomato wants a plan.',
  },
  {
    subject: "Letters From Readers' Gardens",
    category: null,
    previewText: 'Your balconies, fire escapes and front steps.',
    focus: ['a fire-escape strawberry', 'a bathtub potato patch', 'a school-gate herb bed'],
    featuring: 'You sent more photos than we could ever print.',
    hasThumbnail: false,
  },
  {
    subject: 'The Neighbourhood Pollinator Count',
    category: 'community',
    previewText: 'Fifteen minutes, one flower patch, lots of tally marks.',
    focus: ['bumblebees', 'hoverflies', 'solitary bees'],
    featuring: 'every park in the borough',
  },
  {
    subject: 'Pests Without Poison',
    category: 'guides',
    previewText: 'Aphids, slugs and the allies who eat them.',
    focus: ['ladybird larvae', 'copper tape', 'night-time slug patrols'],
    featuring: 'A healthy plot is a busy ecosystem, not a sterile one.',
  },
  {
    subject: 'A Baker Growing Grain on a Rooftop',
    category: 'interviews',
    previewText: 'Twenty square metres of wheat above a bakery.',
    focus: ['heritage wheat', 'a hand thresher', 'a stone mill'],
    featuring: 'Priya Raman, owner of a corner bakery',
    quote: 'One loaf a year from our own roof is enough to change how you taste bread.',
  },
  {
    subject: 'Soil Sensors: Useful or Gimmick?',
    category: 'tools',
    previewText: 'We left four gadgets in the beds for a month.',
    focus: ['a moisture probe', 'a Bluetooth stake', 'a pH meter'],
    featuring: 'Your finger is still the cheapest moisture sensor.',
    audience: { segment: 'engaged' },
  },
  {
    subject: 'Midsummer Harvest Suppers',
    category: 'community',
    previewText: 'Long tables, shared plots and too many courgettes.',
    focus: ['courgette fritters', 'new potatoes', 'elderflower cordial'],
    featuring: 'the Riverside allotments',
  },
  {
    subject: 'Bonus Edition: Five Salads From the Plot',
    category: 'guides',
    previewText: 'A same-day extra for the glut season.',
    focus: ['bean and mint', 'charred lettuce', 'radish and herb'],
    featuring: 'Supper was so good we wrote it down straight away.',
  },
  {
    subject: 'Watering Wisely in a Heatwave',
    category: 'guides',
    previewText: 'Early, deep and at the roots.',
    focus: ['dawn watering', 'deep soaks', 'thick mulch'],
    featuring: 'Little and often trains roots to stay shallow.',
  },
  {
    subject: 'The Allotment Keepers of Riverside',
    category: 'interviews',
    previewText: 'Three generations on one plot.',
    focus: ['saved bean seed', 'a shed of old tools', 'a rhubarb crown from 1974'],
    featuring: 'the Okafor family, plot holders since the seventies',
    quote: 'My grandmother planted that rhubarb, and it still comes up every April.',
  },
  {
    subject: 'Shade Cloth and Other Heatwave Gear',
    category: 'tools',
    previewText: 'Keeping lettuce alive when the pavement sizzles.',
    focus: ['forty percent shade cloth', 'hoops', 'self-watering pots'],
    featuring: 'A little shade keeps leaves sweet instead of bitter.',
  },
  {
    subject: 'Open Gardens Weekend',
    category: 'community',
    previewText: 'Twenty-two private plots open their gates.',
    focus: ['a courtyard vineyard', 'a rooftop meadow', 'a pocket orchard'],
    featuring: 'twenty-two gardens across the city',
  },
  {
    subject: 'Saving Seeds From Your Best Plants',
    category: 'guides',
    previewText: 'Tomatoes, beans and the paper-bag method.',
    focus: ['tomato seed fermenting', 'dried bean pods', 'paper envelopes'],
    featuring: "Your best plant this year is next year's seed packet.",
  },
  {
    subject: "Mapping the City's Fruit Trees",
    category: 'tools',
    previewText: 'A shared map of every public plum and apple.',
    focus: ['a shared map', 'harvest calendars', 'ladder etiquette'],
    featuring: 'There are more fruit trees on public land than you think.',
  },
  {
    subject: 'Notes From a Summer Away',
    category: null,
    previewText: null,
    focus: ["a neighbour's watering rota", 'a seaside herb garden', 'coming home to beans'],
    featuring: 'Leaving a garden for two weeks is an exercise in trust.',
    audience: null,
  },
  {
    subject: "A Farmers' Market Founder Looks Back",
    category: 'interviews',
    previewText: 'Twenty years of Saturday mornings.',
    focus: ['stall rotas', 'a rain plan', 'regulars who became friends'],
    featuring: 'Ruth Abernathy, who started the Square market with four stalls',
    quote: 'We opened with four tables and a kettle, and nobody told us it could not work.',
  },
  {
    subject: 'Preserving the Glut: Jams, Pickles, Ferments',
    category: 'guides',
    previewText: 'What to do with forty courgettes.',
    focus: ['quick pickles', 'plum jam', 'lacto-fermented beans'],
    featuring: 'A full larder is the best kind of winter insurance.',
  },
  {
    subject: 'School Gardens Return for Autumn',
    category: 'community',
    previewText: 'Volunteers needed for weekly sessions.',
    focus: ['bulb planting', 'worm bins', 'a harvest assembly'],
    featuring: 'six primary schools in the borough',
  },
  {
    subject: 'Planting Garlic for Next Summer',
    category: 'guides',
    previewText: 'Cloves in now, bulbs in July.',
    focus: ['hardneck garlic', 'well-drained soil', 'a straw mulch'],
    featuring: 'Garlic needs a cold winter to split into cloves.',
  },
  {
    subject: 'The Best Apps for Garden Planning',
    category: 'tools',
    previewText: 'Bed planners, sowing reminders and harvest logs.',
    focus: ['a bed planner', 'sowing reminders', 'a harvest log'],
    featuring: 'A good plan fits on one screen, or one notebook page.',
  },
  {
    subject: 'A Mushroom Grower in a Basement',
    category: 'interviews',
    previewText: 'Oyster mushrooms, coffee grounds and a humidifier.',
    focus: ['spent coffee grounds', 'oyster spawn', 'a humidity tent'],
    featuring: 'Leo Martins, who grows mushrooms under a laundrette',
    quote: 'Every café on my street hands me its coffee grounds, and I hand back mushrooms.',
    hasThumbnail: false,
  },
  {
    subject: 'Harvest Festival at Hollis Square',
    category: 'community',
    previewText: 'Giant marrows, apple pressing and a brass band.',
    focus: ['the apple press', 'the giant marrow table', 'a soup kitchen'],
    featuring: 'Hollis Square',
  },
  {
    subject: "Leaf Mould: Autumn's Free Gift",
    category: 'guides',
    previewText: 'Bag the leaves now, spread them in two years.',
    focus: ['wet leaves', 'punctured bags', 'a quiet corner'],
    featuring: 'The best soil conditioner falls from the sky every October.',
  },
  {
    subject: 'Cold Frames From Old Windows',
    category: 'tools',
    previewText: 'Salvaged glass, a few hinges, months of extra salad.',
    focus: ['salvaged sash windows', 'brass hinges', 'a prop stick'],
    featuring: 'A cold frame adds a month to each end of the season.',
  },
  {
    subject: 'Squash Soup and Other Autumn Suppers',
    category: null,
    previewText: 'Three recipes for the last of the harvest.',
    focus: ['roasted squash soup', 'kale and bean stew', 'apple crumble'],
    featuring: 'The kitchen is where the garden year ends up.',
  },
  {
    subject: 'Talking Food Policy With a City Councillor',
    category: 'interviews',
    previewText: 'Land, leases and why plots are so hard to get.',
    focus: ['allotment waiting lists', 'meanwhile leases', 'rooftop planning rules'],
    featuring: 'Councillor Hannah Osei, chair of the food strategy group',
    quote: 'A waiting list of nine years tells you demand is not the problem.',
  },
  {
    subject: 'Tool Care Before the Frost',
    category: 'tools',
    previewText: 'Clean, sharpen, oil, hang.',
    focus: ['a wire brush', 'a sharpening stone', 'linseed oil'],
    featuring: 'Ten minutes of care now saves a new spade in spring.',
  },
  {
    subject: 'The Community Fridge Network Turns One',
    category: 'community',
    previewText: 'Nine fridges, four tonnes of food shared.',
    focus: ['surplus veg', 'volunteer cleaners', 'a weekly rota'],
    featuring: 'nine community fridges across the city',
  },
  {
    subject: 'Putting Beds to Bed for Winter',
    category: 'guides',
    previewText: 'Cover crops, mulch and a tidy-but-not-too-tidy plot.',
    focus: ['field beans as cover', 'a blanket of compost', 'hollow stems for insects'],
    featuring: 'Bare soil in winter is soil washing away.',
  },
  {
    subject: "Planning Next Year's Plot",
    category: 'guides',
    previewText: 'Rotation, wish lists and one new crop to try.',
    focus: ['a rotation sketch', 'a seed wish list', 'one experiment'],
    featuring: "The best garden is always next year's.",
  },
];

const SIGN_OFF =
  '<p>That is all for this week. If you grew, cooked or swapped something worth sharing, reply to this email and tell us about it: ' +
  'the best letters make it into a future issue. Until next Sunday, keep your soil covered and your watering can close.</p>\n' +
  '<p>— The Field Notes team</p>';

function escapeHtml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#39;');
}

function slugify(subject: string): string {
  return subject
    .toLowerCase()
    .replaceAll('&', ' and ')
    .replaceAll("'", '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

function escapedFocus(entry: Entry): [string, string, string] {
  const [a, b, c] = entry.focus;
  return [escapeHtml(a), escapeHtml(b), escapeHtml(c)];
}

function list(items: readonly string[]): string {
  return `<ul>\n${items.map((item) => `  <li>${item}</li>`).join('\n')}\n</ul>`;
}

function guideHtml(entry: Entry, slug: string): string {
  const [a, b, c] = escapedFocus(entry);
  return [
    `<h1>${escapeHtml(entry.subject)}</h1>`,
    `<p>Good morning, growers. This week is about ${a}, ${b} and ${c}, written for anyone gardening in a tight space: ` +
      `a balcony, a front step, a shared bed or a single sunny windowsill. ${escapeHtml(entry.featuring)}</p>`,
    `<p>If you have an hour and a trowel this weekend, here is where we would spend it:</p>`,
    list([
      `Begin with ${a}; it sets up everything else.`,
      `Give ${b} a little attention mid-week, especially if the weather turns.`,
      `Finish with ${c}, and write down what you did so next year is easier.`,
    ]),
    `<p>None of this needs to be perfect. Gardens forgive a late start far more readily than we forgive ourselves, ` +
      `and a half-done job in the right week beats a perfect one a month late.</p>`,
    `<p>Our printable checklist for this guide lives on the website: <a href="${SITE}/guides/${slug}">download the checklist</a>.</p>`,
    SIGN_OFF,
  ].join('\n');
}

function interviewHtml(entry: Entry, slug: string): string {
  const [a, b, c] = escapedFocus(entry);
  return [
    `<h1>${escapeHtml(entry.subject)}</h1>`,
    `<p>This week we sat down with ${escapeHtml(entry.featuring)}, to talk about growing food where nobody expects it ` +
      `and about the small habits that keep a city plot going from one year to the next.</p>`,
    `<blockquote>${escapeHtml(entry.quote ?? entry.featuring)}</blockquote>`,
    `<p>We asked what they could not do without. The answer came quickly:</p>`,
    list([a, b, c]),
    `<p>What struck us most was how little of it was about equipment. Most of the work is paying attention: ` +
      `noticing the light, the weather and the neighbours, and adjusting a little every week.</p>`,
    `<p>The full conversation, with photos, is on the website: <a href="${SITE}/interviews/${slug}">read the interview</a>.</p>`,
    SIGN_OFF,
  ].join('\n');
}

function communityHtml(entry: Entry, slug: string): string {
  const [a, b, c] = escapedFocus(entry);
  const where = escapeHtml(entry.featuring);
  return [
    `<h1>${escapeHtml(entry.subject)}</h1>`,
    `<p>News from ${where}. Thank you to everyone who came along, lent a hand or simply stopped to ask what was going on; ` +
      `that curiosity is how most of our readers found their first plot.</p>`,
    `<p>Highlights included ${a}, ${b} and, to everyone's delight, ${c}. ` +
      `Photos are going up on the noticeboard this week, and a few of them will appear in a later issue.</p>`,
    `<blockquote>Gardens are how strangers on the same street become neighbours.</blockquote>`,
    `<p>If you would like to help next time, no experience is needed. Bring gloves if you have them; ` +
      `we always have spares, and there is always tea.</p>`,
    `<p>Dates, directions and the volunteer sign-up sheet are here: <a href="${SITE}/community/${slug}">join in</a>.</p>`,
    SIGN_OFF,
  ].join('\n');
}

function toolsHtml(entry: Entry, slug: string): string {
  const [a, b, c] = escapedFocus(entry);
  return [
    `<h1>${escapeHtml(entry.subject)}</h1>`,
    `<p>Every few weeks we put some kit to work in our own beds and report back honestly. ${escapeHtml(entry.featuring)}</p>`,
    `<p>This round we tried:</p>`,
    list([
      `${a}: the one we would buy again.`,
      `${b}: worth it if you already garden most days.`,
      `${c}: fine, but check second-hand first.`,
    ]),
    `<p>We are not paid by anyone we review, and we return or donate everything we test to the tool library ` +
      `when we are done. If something here made your life easier, or much harder, we would love to hear about it.</p>`,
    `<p>Prices, measurements and our testing notes are online: <a href="${SITE}/tools/${slug}">see the full review</a>.</p>`,
    SIGN_OFF,
  ].join('\n');
}

function letterHtml(entry: Entry, slug: string): string {
  const [a, b, c] = escapedFocus(entry);
  return [
    `<h1>${escapeHtml(entry.subject)}</h1>`,
    `<p>A note from the editors this week, rather than our usual guide. ${escapeHtml(entry.featuring)}</p>`,
    `<p>We have been thinking about ${a}, ${b} and ${c}, and about how much of city growing depends on other people: ` +
      `the neighbour who waters, the friend with a spare pot, the stranger who hands over a bag of seed.</p>`,
    `<p>Small spaces make for small harvests, but they also make for conversations over the fence, ` +
      `and those tend to grow into something bigger than any single plot.</p>`,
    `<blockquote>Grow a little, share a little, and the city gets a little greener every week.</blockquote>`,
    `<p>As always, the archive and a few extras are on the website: <a href="${SITE}/notes/${slug}">read more</a>.</p>`,
    SIGN_OFF,
  ].join('\n');
}

const TEMPLATES: Record<CategoryKey, (entry: Entry, slug: string) => string> = {
  guides: guideHtml,
  interviews: interviewHtml,
  community: communityHtml,
  tools: toolsHtml,
};

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function sentAtMs(index: number): number {
  const week = index < TIE_INDEX ? index : index - 1;
  const lastWeek = ENTRIES.length - 2;
  return LAST_SEND_MS - (lastWeek - week) * WEEK_MS;
}

// Integer arithmetic on the issue's position keeps the numbers plausible and reproducible.
function sentStats(index: number): DemoIssueStats {
  const subscriberCountTargeted = 1180 + index * 41 + ((index * 7) % 13);
  const failedCount = index % 6 === 0 ? 2 : index % 4 === 0 ? 1 : 0;
  const sentCount = subscriberCountTargeted - failedCount;
  const bouncedCount = 2 + ((index * 5) % 7);
  const deliveredCount = sentCount - bouncedCount;
  const openedCount = Math.floor((deliveredCount * (44 + ((index * 3) % 9))) / 100);
  const clickedCount = Math.floor((openedCount * (11 + ((index * 5) % 7))) / 100);
  return {
    newSubscriberCount: 9 + ((index * 11) % 27),
    subscriberCountTargeted,
    sentCount,
    deliveredCount,
    openedCount,
    clickedCount,
    bouncedCount,
    complainedCount: index % 9 === 0 ? 1 : 0,
    failedCount,
  };
}

function emptyStats(): DemoIssueStats {
  return {
    newSubscriberCount: 0,
    subscriberCountTargeted: 0,
    sentCount: 0,
    deliveredCount: 0,
    openedCount: 0,
    clickedCount: 0,
    bouncedCount: 0,
    complainedCount: 0,
    failedCount: 0,
  };
}

function createCategories(): Map<CategoryKey, DemoCategory> {
  return new Map(
    CATEGORY_SEEDS.map(({ key, ...seed }) => [
      key,
      { ...seed, workspaceId: DEMO_WORKSPACE_ID, accountSetId: DEMO_ACCOUNT_SET_ID, updatedAt: seed.createdAt },
    ]),
  );
}

/** Fresh copies per issue, so a caller mutating one record cannot disturb another. */
function categoryFields(categories: Map<CategoryKey, DemoCategory>, key: CategoryKey | null): Pick<DemoIssue, 'category' | 'categories'> {
  const category = key === null ? undefined : categories.get(key);
  return category === undefined ? { category: null, categories: [] } : { category: { ...category }, categories: [{ ...category }] };
}

function contentJson(html: string | null): unknown {
  return { type: 'doc', version: 1, blocks: html === null ? 0 : html.split('\n').length };
}

function publishedIssue(entry: Entry, index: number, categories: Map<CategoryKey, DemoCategory>, thumbnails: string): UnnumberedIssue {
  const slug = slugify(entry.subject);
  const sent = sentAtMs(index);
  const html = entry.category === null ? letterHtml(entry, slug) : TEMPLATES[entry.category](entry, slug);
  return {
    slug,
    workspaceId: DEMO_WORKSPACE_ID,
    accountSetId: DEMO_ACCOUNT_SET_ID,
    subject: entry.subject,
    previewText: entry.previewText,
    thumbnailUrl: entry.hasThumbnail === false ? null : `${thumbnails}/${slug}.svg`,
    contentHtml: html,
    contentJson: contentJson(html),
    scheduledFor: null,
    audience: entry.audience === undefined ? { segment: 'all' } : entry.audience && { ...entry.audience },
    status: 'sent',
    isPublic: true,
    ...categoryFields(categories, entry.category),
    stats: sentStats(index),
    createdBy: EDITOR,
    sentAt: iso(sent),
    createdAt: iso(sent - (3 + (index % 3)) * DAY_MS),
    updatedAt: iso(sent - 90 * 60 * 1000),
  };
}

/** Records a public site must never show; each one trips a different filtering rule. */
function hiddenIssues(categories: Map<CategoryKey, DemoCategory>, thumbnails: string): UnnumberedIssue[] {
  const base = (): Pick<UnnumberedIssue, 'workspaceId' | 'accountSetId' | 'contentJson' | 'scheduledFor' | 'audience' | 'createdBy'> => ({
    workspaceId: DEMO_WORKSPACE_ID,
    accountSetId: DEMO_ACCOUNT_SET_ID,
    contentJson: null,
    scheduledFor: null,
    audience: { segment: 'all' },
    createdBy: EDITOR,
  });
  const draftHtml = (subject: string, slug: string): string =>
    letterHtml(
      {
        subject,
        category: null,
        previewText: null,
        focus: ['unfinished notes', 'placeholder photos', 'a missing ending'],
        featuring: 'Not ready for readers yet.',
      },
      slug,
    );

  const issues: UnnumberedIssue[] = [
    // Hidden: draft (status 'draft', private).
    {
      ...base(),
      slug: 'winter-squash-varieties-compared',
      subject: 'Winter Squash Varieties Compared',
      previewText: 'Crown Prince versus Uchiki Kuri, round two.',
      thumbnailUrl: `${thumbnails}/winter-squash-varieties-compared.svg`,
      contentHtml: draftHtml('Winter Squash Varieties Compared', 'winter-squash-varieties-compared'),
      status: 'draft',
      isPublic: false,
      ...categoryFields(categories, 'guides'),
      stats: emptyStats(),
      sentAt: null,
      createdAt: '2026-11-03T16:20:00.000Z',
      updatedAt: '2026-11-14T11:05:00.000Z',
    },
    // Hidden: draft without a slug, the way the service stores a freshly created issue.
    {
      ...base(),
      slug: null,
      subject: 'Untitled issue',
      previewText: null,
      thumbnailUrl: null,
      contentHtml: null,
      audience: null,
      status: 'draft',
      isPublic: false,
      ...categoryFields(categories, null),
      stats: emptyStats(),
      sentAt: null,
      createdAt: '2026-11-13T08:00:00.000Z',
      updatedAt: '2026-11-13T08:00:00.000Z',
    },
    // Hidden: draft (status 'draft', private), half-written.
    {
      ...base(),
      slug: 'gifts-for-gardeners-draft',
      subject: 'Gifts for Gardeners (draft)',
      previewText: 'Stocking fillers under ten pounds.',
      thumbnailUrl: null,
      contentHtml: draftHtml('Gifts for Gardeners (draft)', 'gifts-for-gardeners-draft'),
      status: 'draft',
      isPublic: false,
      ...categoryFields(categories, 'tools'),
      stats: emptyStats(),
      sentAt: null,
      createdAt: '2026-10-28T19:45:00.000Z',
      updatedAt: '2026-11-09T21:10:00.000Z',
    },
    // Hidden: scheduled draft; isPublic is already true, but it has not been sent.
    {
      ...base(),
      slug: 'december-planting-calendar',
      subject: 'December Planting Calendar',
      previewText: 'Garlic stragglers, microgreens and planning by the radiator.',
      thumbnailUrl: `${thumbnails}/december-planting-calendar.svg`,
      contentHtml: draftHtml('December Planting Calendar', 'december-planting-calendar'),
      scheduledFor: '2026-12-01T09:00:00.000Z',
      status: 'draft',
      isPublic: true,
      ...categoryFields(categories, 'guides'),
      stats: emptyStats(),
      sentAt: null,
      createdAt: '2026-11-10T10:00:00.000Z',
      updatedAt: '2026-11-14T17:30:00.000Z',
    },
    // Hidden: sent to members only (isPublic false).
    {
      ...base(),
      slug: 'members-only-harvest-report',
      subject: 'Members-Only Harvest Report',
      previewText: 'What the shared plots produced this year, by the kilo.',
      thumbnailUrl: `${thumbnails}/members-only-harvest-report.svg`,
      contentHtml: draftHtml('Members-Only Harvest Report', 'members-only-harvest-report'),
      audience: { segment: 'members' },
      status: 'sent',
      isPublic: false,
      ...categoryFields(categories, 'community'),
      stats: sentStats(7),
      sentAt: '2026-11-11T18:00:00.000Z',
      createdAt: '2026-11-06T12:00:00.000Z',
      updatedAt: '2026-11-11T17:15:00.000Z',
    },
    // Hidden: failed send (status 'failed').
    {
      ...base(),
      slug: 'failed-send-test',
      subject: 'Send Test (failed)',
      previewText: 'Testing the new sending domain.',
      thumbnailUrl: null,
      contentHtml: draftHtml('Send Test (failed)', 'failed-send-test'),
      status: 'failed',
      isPublic: true,
      ...categoryFields(categories, null),
      stats: { ...emptyStats(), subscriberCountTargeted: 3, failedCount: 3 },
      sentAt: null,
      createdAt: '2026-11-12T15:00:00.000Z',
      updatedAt: '2026-11-12T15:04:00.000Z',
    },
    // Hidden: still sending; its sentAt is the newest of all, so it would top any list that only sorts.
    {
      ...base(),
      slug: 'sending-right-now',
      subject: 'Frost Is Coming: Protect Your Pots Tonight',
      previewText: 'A quick alert while the forecast is fresh.',
      thumbnailUrl: `${thumbnails}/sending-right-now.svg`,
      contentHtml: draftHtml('Frost Is Coming: Protect Your Pots Tonight', 'sending-right-now'),
      status: 'sending',
      isPublic: true,
      ...categoryFields(categories, 'guides'),
      stats: { ...emptyStats(), subscriberCountTargeted: 3140, sentCount: 812 },
      sentAt: '2026-11-15T09:30:00.000Z',
      createdAt: '2026-11-15T07:40:00.000Z',
      updatedAt: '2026-11-15T09:30:00.000Z',
    },
    // Hidden: sent and public but with an empty-string slug; a careful proxy drops it.
    {
      ...base(),
      slug: '',
      subject: 'Mid-Week Note: Bulb Order Deadline',
      previewText: 'Last orders for spring bulbs close on Friday.',
      thumbnailUrl: null,
      contentHtml: draftHtml('Mid-Week Note: Bulb Order Deadline', 'mid-week-note'),
      status: 'sent',
      isPublic: true,
      ...categoryFields(categories, 'community'),
      stats: sentStats(12),
      sentAt: '2026-11-12T09:00:00.000Z',
      createdAt: '2026-11-10T09:00:00.000Z',
      updatedAt: '2026-11-12T08:30:00.000Z',
    },
  ];
  return issues.map((issue) => ({ ...issue, contentJson: contentJson(issue.contentHtml) }));
}

// Reversing each chunk of five keeps the array close to, but never exactly, send order.
function shuffledForDemo<T>(items: readonly T[]): T[] {
  const out: T[] = [];
  for (let start = 0; start < items.length; start += 5) {
    out.push(...items.slice(start, start + 5).reverse());
  }
  return out;
}

/**
 * Builds the whole sample workspace afresh: same content every call, new objects every call.
 * Thumbnails point at `siteOrigin`'s /thumbnails/ (where demo mode serves examples/site).
 */
export function createSamplePublication(siteOrigin: string = DEFAULT_DEMO_ORIGIN): { categories: DemoCategory[]; issues: DemoIssue[] } {
  const thumbnails = `${siteOrigin.replace(/\/+$/, '')}/thumbnails`;
  const categories = createCategories();
  const published = shuffledForDemo(ENTRIES.map((entry, index) => publishedIssue(entry, index, categories, thumbnails)));
  const hidden = hiddenIssues(categories, thumbnails);

  // Hidden records sit among the published ones rather than at the end, where a buggy slice could miss them.
  const ordered: UnnumberedIssue[] = [];
  published.forEach((issue, position) => {
    ordered.push(issue);
    const extra = position % 6 === 1 ? hidden.shift() : undefined;
    if (extra !== undefined) ordered.push(extra);
  });
  ordered.push(...hidden);

  return {
    categories: [...categories.values()],
    issues: ordered.map((issue, position) => ({ id: `iss_${String(position + 1).padStart(4, '0')}`, ...issue })),
  };
}
