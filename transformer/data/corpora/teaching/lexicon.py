"""The teaching grammar's lexicon: everyday English lemmas with their French, gender and selection flags.

Nouns are written one a line, `english[,plural] french[,plural] gender flags`, "_" standing for a space.
Plurals not given follow the regular rules of `morphology`. Flags:
  mass       uncountable (takes the partitive: du pain, de l'eau; never plural)
  @in @at @on  a place's own locative preposition ("in the kitchen", "at the station", "on the beach");
             "@on:à" gives its French when it is not the usual one ("on the farm" -> "à la ferme")
  dest       a place one goes to ("to the park" -> "au parc")
  furn       furniture things sit on or under ("on the table", "under the bed")
  child      people that "big" and "little" suit ("a big boy" -> "un grand garçon")
  pet, open, fragile, container, text, dish, sound, screen, room, visit, drive: what verbs and
             adjectives may take the noun (the generator's sense restrictions; the parser ignores them)
"""

from __future__ import annotations

from dataclasses import dataclass

from transformer.data.corpora.teaching.lexicon_generated import ADJECTIVES_2, CONJUGATIONS, NOUNS_2, VERBS_MORE
from transformer.data.corpora.teaching.morphology import (
    english_ing,
    english_past,
    english_plural,
    english_s3,
    french_adjective_forms,
    french_conjugation,
    french_plural,
)

NOUNS: dict[str, str] = {
    "people": """
        man,men homme m
        woman,women femme f
        boy garçon m child
        girl fille f child
        child,children enfant m child
        baby bébé m child
        teacher professeur m
        student étudiant m
        pupil élève m child
        doctor médecin m
        nurse infirmière f
        friend ami m
        neighbour voisin m
        king roi m
        queen reine f
        farmer fermier m
        cook cuisinier m
        baker boulanger m
        policeman,policemen policier m
        singer chanteur m
        driver chauffeur m
        pilot pilote m
        waiter serveur m
        artist artiste m
        tourist touriste m
        visitor visiteur m
        actor acteur m
        dancer danseur m
        postman,postmen facteur m
        soldier soldat m
        writer écrivain m
        lawyer avocat m
    """,
    "family": """
        father père m
        mother mère f
        brother frère m child
        sister sœur f child
        son fils,fils m child
        daughter fille f child
        uncle oncle m
        aunt tante f
        cousin cousin m
        grandfather grand-père,grands-pères m
        grandmother grand-mère,grands-mères f
        husband mari m
        wife,wives femme f
        parent parent m
        family,families famille f
    """,
    "animals": """
        cat chat m pet
        dog chien m pet
        horse cheval m pet
        bird oiseau m pet sound
        cow vache f
        pig cochon m
        mouse,mice souris f pet
        rabbit lapin m pet
        duck canard m
        hen poule f
        lion lion m
        tiger tigre m
        elephant éléphant m
        monkey singe m
        bear ours m
        wolf,wolves loup m
        fox renard m
        frog grenouille f
        snake serpent m
        bee abeille f
        spider araignée f
        owl hibou,hiboux m
        goat chèvre f
        donkey âne m
        turtle tortue f pet
        giraffe girafe f
        zebra zèbre m
        squirrel écureuil m
        lamb agneau m
        butterfly papillon m
        dolphin dauphin m
        whale baleine f
        ant fourmi f
        snail escargot m
        parrot perroquet m pet sound
        camel chameau m
        shark requin m
        puppy chiot m pet
        kitten chaton m pet
    """,
    "food": """
        bread pain m mass dish
        cheese fromage m mass
        soup soupe f mass dish
        rice riz m mass dish
        meat viande f mass
        butter beurre m mass
        jam confiture f mass dish
        chocolate chocolat m mass
        salad salade f mass dish
        sugar sucre m mass
        salt sel m mass
        honey miel m mass
        chicken poulet m mass dish
        ham jambon m mass
        ice_cream glace f mass dish
        apple pomme f
        banana banane f
        orange orange f
        cake gâteau m dish
        egg œuf m
        sandwich sandwich,sandwichs m dish
        pizza pizza f dish
        carrot carotte f
        tomato,tomatoes tomate f
        strawberry fraise f
        pear poire f
        lemon citron m
        cookie biscuit m dish
        pie tarte f dish
        cherry cerise f
        peach pêche f
        onion oignon m
        potato,potatoes pomme_de_terre,pommes_de_terre f
        mushroom champignon m
        pancake crêpe f dish
        croissant croissant m
        melon melon m
        pineapple ananas m
    """,
    "drinks": """
        water eau f mass
        milk lait m mass
        coffee café m mass dish
        tea thé m mass dish
        juice jus m mass
        wine vin m mass
        lemonade limonade f mass dish
        beer bière f mass
    """,
    "places": """
        house maison f @in dest room
        school école f @at dest visit
        park parc m @in dest visit
        garden jardin m @in dest
        kitchen cuisine f @in room
        station gare f @at dest
        market marché m @at dest visit
        hospital hôpital m @at dest
        church église f @in dest visit
        library bibliothèque f @in dest visit
        shop magasin m @in dest
        beach plage f @on dest
        forest forêt f @in
        city ville f @in visit
        village village m @in visit
        museum musée m @in dest visit
        restaurant restaurant m @in dest
        office bureau m @in dest room
        bank banque f @in dest
        bakery boulangerie f @in dest
        farm ferme f @on:à dest visit
        street rue f @in:dans
        bedroom chambre f @in room
        living_room salon m @in room
        bathroom salle_de_bains,salles_de_bains f @in room
        classroom classe f @in room
        garage garage m @in room
        cinema cinéma m @at dest
        zoo zoo m @at dest visit
        airport aéroport m @at dest
        hotel hôtel m @in dest
        pool piscine f @at dest
        stadium stade m @at dest
        theatre théâtre m @at dest
        supermarket supermarché m @at dest
        castle château m @in dest visit
        mountain montagne f @on
        river rivière f @in
        lake lac m @in
        sea mer f @in
        island île f @on
        bridge pont m @on
        field champ m @in
        road route f @on
    """,
    "objects": """
        book livre m text open
        table table f furn
        chair chaise f furn
        sofa canapé m furn
        bed lit m furn
        desk bureau m furn
        door porte f open
        window fenêtre f open fragile
        cupboard placard m open
        fridge réfrigérateur m open
        pen stylo m
        pencil crayon m
        bag sac m open container
        key clé f
        phone téléphone m fragile
        computer ordinateur m fragile
        letter lettre f text
        newspaper journal m text
        magazine magazine m text
        notebook cahier m text
        dictionary dictionnaire m text
        story histoire f text
        map carte f text
        ball ballon m
        toy jouet m fragile
        doll poupée f
        game jeu m
        box boîte f open container
        basket panier m container
        cup tasse f container fragile
        glass verre m container fragile
        bottle bouteille f open container fragile
        plate assiette f fragile
        knife,knives couteau m
        fork fourchette f
        spoon cuillère f
        clock horloge f fragile
        watch montre f fragile
        lamp lampe f fragile
        picture image f
        photo photo f
        mirror miroir m fragile
        candle bougie f
        guitar guitare f sound
        piano piano m sound
        radio radio f sound
        television télévision f screen
        film film m screen
        song chanson f sound
        music musique f mass sound
        umbrella parapluie m open
        ticket billet m
        gift cadeau m
        ring bague f
        wallet portefeuille m
        money argent m mass
        paper papier m mass
    """,
    "clothes": """
        hat chapeau m
        shirt chemise f
        dress robe f
        shoe chaussure f
        coat manteau m
        skirt jupe f
        sock chaussette f
        scarf,scarves écharpe f
        jacket veste f
        sweater pull m
        glove gant m
        boot botte f
        tie cravate f
        belt ceinture f
        cap casquette f
    """,
    "transport": """
        bicycle vélo m
        car voiture f drive
        bus bus m drive
        train train m
        boat bateau m
        plane avion m
        truck camion m drive
        taxi taxi m drive
        tractor tracteur m drive
        motorbike moto f drive
    """,
    "nature": """
        tree arbre m
        flower fleur f
        star étoile f
        leaf,leaves feuille f
        grass herbe f mass
        cloud nuage m
        snow neige f mass
        stone pierre f
    """,
}

# english  french (m[,f[,mp[,fp]]][/form before a vowel])  pre|post  what it describes (categories, +flag, !mass)
ADJECTIVES: dict[str, str] = {
    "colours": """
        red rouge post objects clothes transport nature !mass
        green vert post objects clothes transport nature !mass
        blue bleu post objects clothes transport nature !mass
        yellow jaune post objects clothes transport nature !mass
        black noir post animals objects clothes transport !mass
        white blanc,blanche post animals objects clothes transport nature !mass
        grey gris post animals objects clothes transport !mass
        brown marron,marron,marron,marron post animals objects clothes !mass
        pink rose post objects clothes nature !mass
        purple violet,violette post objects clothes nature !mass
    """,
    "adjectives": """
        big grand pre animals places objects transport nature +child !mass
        small petit pre people family animals places objects clothes transport food nature !mass
        little petit pre people family animals objects !mass
        young jeune pre people family animals
        old vieux,vieille,vieux,vieilles/vieil pre people family animals places objects clothes transport nature
        new nouveau,nouvelle,nouveaux,nouvelles/nouvel pre people objects clothes transport +room +dest
        beautiful beau,belle,beaux,belles/bel pre people family animals places objects clothes transport nature
        pretty joli pre people family places clothes nature objects
        good bon,bonne pre food drinks people animals +text
        bad mauvais pre food drinks +text
        long long,longue pre +text clothes places transport !mass
        happy heureux,heureuse post people family animals
        sad triste post people family animals +text
        tired fatigué post people family animals
        sick malade post people family animals
        angry fâché post people family animals
        busy occupé post people family places
        kind gentil,gentille post people family animals
        funny drôle post people family animals +text +screen
        clever intelligent post people family animals
        lazy paresseux,paresseuse post people family animals
        rich riche post people family
        poor pauvre post people family
        strong fort post people family animals drinks
        famous célèbre post people places +text +screen +sound
        quiet calme post people family animals places
        noisy bruyant post people family animals places transport
        hot chaud post food drinks places
        cold froid post food drinks places
        fresh frais,fraîche,frais,fraîches post food drinks
        delicious délicieux,délicieuse post food drinks
        sweet sucré post food drinks
        heavy lourd post objects clothes animals
        light léger,légère post objects clothes
        expensive cher,chère post objects clothes transport food drinks
        clean propre post places objects clothes transport animals
        dirty sale post places objects clothes transport animals
        broken cassé post objects transport
        empty vide post +container +room
        full plein post +container +room
        open ouvert post +open places
        closed fermé post +open places
        fast rapide post transport animals
        slow lent post transport animals
        modern moderne post places objects transport
        interesting intéressant post people +text +screen places
        short court post +text clothes
        wet mouillé post animals objects clothes
        dry sec,sèche post food objects clothes
        soft doux,douce,doux,douces post animals objects clothes food
    """,
}

CATEGORIES_PEOPLE = ("people", "family")
_ALL = "people family animals food drinks places objects clothes transport nature"
_THINGS = "objects clothes transport"

# english base[,past[,ing]] ("_" joins a particle)  french  kinds  subjects | objects | recipients  [flags]
# flags: generic (a bare noun takes the definite article: "likes cats" -> "aime les chats"),
#        partitive (a bare noun is a partitive/indefinite object: "eats bread" -> "mange du pain"),
#        stative (no progressive), nopast (past identical to the present in English), place (needs a place),
#        être (compound past with être), to/at (the preposition of a motion verb's destination)
VERBS = f"""
    eat,ate manger trans,intr people family animals | food | - partitive
    drink,drank boire trans people family animals | drinks | - partitive
    buy,bought acheter trans people family | food drinks {_THINGS} | - partitive
    sell,sold vendre trans,give people family | food drinks {_THINGS} | people family partitive
    want,wanted vouloir trans people family animals | food drinks {_THINGS} +pet | - partitive stative
    have,had avoir trans people family | food drinks {_THINGS} +pet | - partitive stative
    like,liked aimer trans people family animals | food drinks animals places +sound +screen | - generic stative
    love,loved aimer trans people family | food drinks animals people family places +sound | - generic stative
    hate,hated détester trans people family animals | food drinks animals +sound | - generic stative
    prefer,preferred,preferring préférer trans people family | food drinks animals +sound | - generic stative
    see,saw voir trans people family animals | {_ALL} | - stative
    watch,watched regarder trans people family animals | people family animals transport +screen | -
    look_for,looked chercher trans people family animals | {_THINGS} people family animals | -
    find,found trouver trans people family animals | {_THINGS} people family animals | -
    lose,lost perdre trans people family | {_THINGS} +pet | -
    take,took prendre trans people family | objects clothes transport food | - partitive
    bring,brought apporter trans,give people family | food drinks objects clothes | people family partitive
    carry,carried porter trans people family | objects +child | -
    wear,wore porter trans people family | clothes | -
    make,made faire trans people family | +dish | - partitive
    cook,cooked cuisiner trans,intr people family | +dish | - partitive
    open,opened ouvrir trans people family | +open | -
    close,closed fermer trans people family | +open | -
    wash,washed laver trans people family | clothes transport +container +pet +fragile | -
    clean,cleaned nettoyer trans people family | +room transport objects | -
    read,read lire trans,intr people family | +text | - nopast
    write,wrote écrire trans,intr people family | +text | -
    draw,drew dessiner trans,intr people family | animals people family nature transport objects | -
    call,called appeler trans people family | people family +pet | -
    help,helped aider trans people family | people family | -
    meet,met rencontrer trans people family | people family | -
    visit,visited visiter trans people family | +visit | -
    wait_for,waited attendre trans people family animals | people family +drive train plane | -
    listen_to,listened écouter trans people family animals | people family +sound | -
    hear,heard entendre trans people family animals | people family animals +sound | - stative
    feed,fed nourrir trans people family | animals | - partitive
    catch,caught attraper trans people family animals | animals ball | -
    follow,followed suivre trans people family animals | people family animals | -
    choose,chose choisir trans people family | {_THINGS} food | -
    finish,finished finir trans people family | +dish +text | -
    break,broke casser trans people family animals | +fragile | -
    repair,repaired réparer trans people family | +fragile transport | -
    drive,drove conduire trans people family | +drive | -
    forget,forgot,forgetting oublier trans people family | {_THINGS} | -
    fill,filled remplir trans people family | +container | -
    give,gave donner give people family | food drinks objects clothes | people family animals partitive
    send,sent envoyer give people family | +text gift photo | people family
    show,showed montrer give people family | objects clothes animals | people family
    offer,offered offrir give people family | food drinks objects clothes | people family partitive
    sleep,slept dormir intr people family animals | - | -
    play,played jouer intr people family animals | - | -
    work,worked travailler intr people family | - | -
    sing,sang chanter intr people family | - | -
    dance,danced danser intr people family | - | -
    run,ran,running courir intr people family animals | - | -
    swim,swam,swimming nager intr people family animals | - | -
    walk,walked marcher intr people family animals | - | -
    laugh,laughed rire intr people family | - | -
    smile,smiled sourire intr people family | - | -
    cry,cried pleurer intr people family | - | -
    study,studied étudier intr people family | - | -
    jump,jumped sauter intr people family animals | - | -
    live,lived habiter intr people family animals | - | - stative place
    go,went aller motion people family animals | - | - être to
    come,came venir motion people family animals | - | - être to
    return,returned retourner motion people family animals | - | - être to
    arrive,arrived arriver motion people family | - | - être at
"""
# Grammar 2: reflexive verbs (French "se" + verb, compound past with être). The English particle may be several
# words ("go_to_bed"); the French infinitive is given without its "se". Then the weather verbs (it is raining).
VERBS_2 = """
    wake_up,woke réveiller refl people family animals | - | - être
    get_up,got,getting lever refl people family animals | - | - être
    go_to_bed,went coucher refl people family animals | - | - être
    get_dressed,got,getting habiller refl people family | - | - être
    sit_down,sat,sitting asseoir refl people family animals | - | - être
    hurry,hurried dépêcher refl people family | - | - être
    rest,rested reposer refl people family animals | - | - être
    have_fun,had amuser refl people family animals | - | - être
    get_lost,got,getting perdre refl people family animals | - | - être
    calm_down,calmed calmer refl people family animals | - | - être
    hide,hid cacher refl people family animals | - | - être
    get_married,got,getting marier refl people family | - | - être
    rain pleuvoir weather - | - | -
    snow neiger weather - | - | -
"""
# English past participles that differ from the past tense ("has just eaten")
EN_PARTICIPLES = dict(pair.split(":") for pair in """
    eat:eaten drink:drunk see:seen take:taken write:written draw:drawn wear:worn break:broken give:given
    show:shown sing:sung swim:swum run:run go:gone come:come forget:forgotten choose:chosen drive:driven
    wake:woken get:got hide:hidden ride:ridden fly:flown grow:grown know:known throw:thrown begin:begun
    speak:spoken steal:stolen fall:fallen
""".split())

NUMBERS = ("one un", "two deux", "three trois", "four quatre", "five cinq", "six six", "seven sept", "eight huit",
           "nine neuf", "ten dix", "eleven onze", "twelve douze", "thirteen treize", "fourteen quatorze",
           "fifteen quinze", "sixteen seize", "seventeen dix-sept", "eighteen dix-huit", "nineteen dix-neuf",
           "twenty vingt")
DAYS = ("Monday lundi", "Tuesday mardi", "Wednesday mercredi", "Thursday jeudi", "Friday vendredi",
        "Saturday samedi", "Sunday dimanche")

# english | french | links (english word - french word) | tenses it suits
TIMES = """
    today | aujourd'hui | 0-0 0-1 | present progressive past future can want
    yesterday | hier | 0-0 | past
    tomorrow | demain | 0-0 | future can want
    now | maintenant | 0-0 | present progressive can want
    every day | tous les jours | 0-0 0-1 1-2 | present
    every morning | tous les matins | 0-0 0-1 1-2 | present
    in the morning | le matin | 0-0 1-0 2-1 | present past future can want
    in the afternoon | l'après-midi | 0-0 1-0 2-1 2-2 2-3 | present past future can want
    in the evening | le soir | 0-0 1-0 2-1 | present past future can want
    at night | la nuit | 0-0 1-1 | present past future can want
    at noon | à midi | 0-0 1-1 | present past future can want
    this morning | ce matin | 0-0 1-1 | past future progressive
    tonight | ce soir | 0-0 0-1 | future progressive can want
    last night | hier soir | 0-0 1-1 | past
    last week | la semaine dernière | 0-2 1-0 1-1 | past
    next week | la semaine prochaine | 0-2 1-0 1-1 | future can want
"""

PRONOUNS = {  # english -> (french, person 0..4, gender)
    "I": ("je", 0, "m"), "you": ("tu", 1, "m"), "he": ("il", 2, "m"), "she": ("elle", 2, "f"),
    "we": ("nous", 3, "m"), "they": ("ils", 4, "m"),
}
# english -> (masculine singular, feminine singular, plural); ma/ta/sa become mon/ton/son before a vowel
POSSESSIVES = {
    "my": ("mon", "ma", "mes"), "your": ("ton", "ta", "tes"), "his": ("son", "sa", "ses"), "her": ("son", "sa", "ses"),
    "our": ("notre", "notre", "nos"), "their": ("leur", "leur", "leurs"),
}
PREPOSITIONS = {  # english -> french; "in", "at", "on" follow the place noun's own preposition where it has one
    "in": "dans", "at": "à", "on": "sur", "under": "sous", "near": "près de", "behind": "derrière",
    "in front of": "devant", "next to": "à côté de", "to": "à",
}
LOCATIVE = ("in", "at", "on")  # a place's own preposition
FURNITURE_PREPOSITIONS = ("on", "under", "near", "behind", "in front of", "next to")
PLACE_PREPOSITIONS = ("near", "behind", "in front of", "next to")  # said of any place, besides its own


@dataclass(frozen=True)
class Noun:
    en: str            # lemma; may hold a space ("ice cream")
    en_plural: str
    fr: str            # may hold spaces or hyphens ("pomme de terre", "grand-père")
    fr_plural: str
    gender: str        # "m" | "f"
    category: str      # "people", "animals", ...
    flags: frozenset[str]
    locative: tuple[str, str] | None  # places: (english preposition, french preposition)
    grammar: int = 1   # the grammar version that introduced it

    @property
    def mass(self) -> bool:
        return "mass" in self.flags


@dataclass(frozen=True)
class Adjective:
    en: str
    forms: tuple[str, str, str, str]  # masculine singular, feminine singular, masculine plural, feminine plural
    before_vowel: str | None          # bel, nouvel, vieil
    pre: bool                         # placed before the noun in French
    category: str                     # "colours" | "adjectives"
    describes: frozenset[str]         # noun categories and "+flag"s it suits
    count_only: bool                  # "!mass": never of an uncountable noun
    grammar: int = 1                  # the grammar version that introduced it

    def suits(self, noun: Noun) -> bool:
        return not (self.count_only and noun.mass) and selects(self.describes, noun)


def selects(selection: frozenset[str], noun: Noun) -> bool:
    """Whether a selection (categories, "+flag"s and single nouns) takes `noun`."""
    return (noun.category in selection or noun.en in selection
            or any(f"+{flag}" in selection for flag in noun.flags))


@dataclass(frozen=True)
class Verb:
    en: str                      # lemma with its particle ("look for")
    base: str                    # "look"
    s3: str
    past: str
    ing: str
    particle: str | None         # "for", "up", "to bed"
    fr: str                      # infinitive
    present: tuple[str, ...]     # by person (je, tu, il, nous, ils)
    future: tuple[str, ...]
    participle: str
    kinds: frozenset[str]        # "trans", "intr", "motion", "give"
    subjects: frozenset[str]
    objects: frozenset[str]
    recipients: frozenset[str]
    flags: frozenset[str]
    pp: str = ""                 # English past participle ("eaten"), for "has just eaten"
    grammar: int = 1             # the grammar version that introduced it

    @property
    def etre(self) -> bool:
        return "être" in self.flags

    @property
    def reflexive(self) -> bool:
        return "refl" in self.kinds


@dataclass(frozen=True)
class TimePhrase:
    en: str
    fr: str
    links: tuple[tuple[int, int], ...]  # local (english word, french word) indices
    tenses: frozenset[str]


def _nouns() -> dict[str, Noun]:
    nouns: dict[str, Noun] = {}
    for grammar, table in ((1, NOUNS), (2, NOUNS_2)):
        _add_nouns(nouns, table, grammar)
    return nouns


def _add_nouns(nouns: dict[str, Noun], table: dict[str, str], grammar: int) -> None:
    for category, block in table.items():
        for line in block.strip().splitlines():
            en, fr, gender, *flags = line.split()
            en, _, en_pl = en.replace("_", " ").partition(",")
            fr, _, fr_pl = fr.replace("_", " ").partition(",")
            locative = None
            for flag in flags:
                if flag.startswith("@"):
                    prep, _, fr_prep = flag[1:].partition(":")
                    locative = (prep, fr_prep or PREPOSITIONS[prep])
            assert en not in nouns, en
            nouns[en] = Noun(en, en_pl or english_plural(en), fr, fr_pl or french_plural(fr), gender, category,
                             frozenset(f for f in flags if not f.startswith("@")), locative, grammar)


def _adjectives() -> dict[str, Adjective]:
    adjectives = {}
    for grammar, category, block in [(1, c, b) for c, b in ADJECTIVES.items()] + [(2, "adjectives", ADJECTIVES_2)]:
        for line in block.strip().splitlines():
            en, fr, position, *describes = line.split()
            forms, alt = french_adjective_forms(fr)
            assert en not in adjectives, en
            adjectives[en] = Adjective(en, forms, alt, position == "pre", category,
                                       frozenset(d for d in describes if d != "!mass"), "!mass" in describes, grammar)
    return adjectives


def _words(field: str) -> frozenset[str]:
    return frozenset() if field.strip() == "-" else frozenset(field.split())


def _verbs(table: str, grammar: int) -> dict[str, Verb]:
    verbs = {}
    for line in table.strip().splitlines():
        head, selection = line.split(None, 3), line.split("|")
        en, fr, kinds = head[0], head[1], head[2]
        subjects = selection[0].split(None, 3)[3]
        recipients, *flags = selection[2].split()
        base, _, particle = en.split(",")[0].partition("_")
        particle = particle.replace("_", " ")
        given = en.split(",")[1:]
        past = given[0] if given else english_past(base)
        ing = given[1] if len(given) > 1 else english_ing(base)
        if fr in CONJUGATIONS:  # Lefff's tables for grammar 2's verbs
            present_text, future_text, participle = CONJUGATIONS[fr]
            present, future = tuple(present_text.split()), tuple(future_text.split())
        else:
            present, future, participle = french_conjugation(fr)
        lemma = f"{base} {particle}" if particle else base
        verbs[lemma] = Verb(lemma, base, english_s3(base), past, ing, particle or None, fr, present, future,
                            participle, frozenset(kinds.split(",")), _words(subjects), _words(selection[1]),
                            _words(recipients), frozenset(flags), EN_PARTICIPLES.get(base, past), grammar)
    return verbs


def _times() -> dict[str, TimePhrase]:
    times = {}
    for line in TIMES.strip().splitlines():
        en, fr, links, tenses = (part.strip() for part in line.split("|"))
        pairs = tuple(tuple(int(i) for i in link.split("-")) for link in links.split())
        times[en] = TimePhrase(en, fr, pairs, frozenset(tenses.split()))
    for day in DAYS:  # "on Monday" -> "lundi" (one Monday); "on Mondays" -> "le lundi" (every Monday)
        en, fr = day.split()
        times[f"on {en}"] = TimePhrase(f"on {en}", fr, ((0, 0), (1, 0)), frozenset({"past", "future", "can", "want"}))
        times[f"on {en}s"] = TimePhrase(f"on {en}s", f"le {fr}", ((0, 0), (1, 1)), frozenset({"present"}))
    return times


NOUN = _nouns()
ADJECTIVE = _adjectives()
VERB = _verbs(VERBS, 1) | _verbs(VERBS_2, 2) | _verbs(VERBS_MORE, 2)
TIME = _times()
NUMBER = dict(n.split() for n in NUMBERS)


# Grammar 2's closed classes.
OBJECT_PRONOUNS = {  # english -> (direct, indirect, after an affirmative imperative (direct, indirect), person, gender)
    "me": ("me", "me", ("moi", "moi"), 0, "m"), "you": ("te", "te", ("toi", "toi"), 1, "m"),
    "him": ("le", "lui", ("le", "lui"), 2, "m"), "her": ("la", "lui", ("la", "lui"), 2, "f"),
    "us": ("nous", "nous", ("nous", "nous"), 3, "m"), "them": ("les", "leur", ("les", "leur"), 4, "m"),
}
REFLEXIVE_PRONOUNS = ("me", "te", "se", "nous", "se")  # by person; "vous" for the vous imperative
ADVERBS = {"always": "toujours", "often": "souvent", "sometimes": "parfois", "never": "jamais",
           "usually": "généralement", "rarely": "rarement"}
IDIOMS = {"hungry": "faim", "thirsty": "soif", "afraid": "peur", "sleepy": "sommeil", "right": "raison",
          "wrong": "tort", "cold": "froid", "hot": "chaud"}  # be + adjective -> avoir + noun
WEATHER_ADJECTIVES = {"cold": "froid", "hot": "chaud", "nice": "beau"}  # it is cold -> il fait froid
WH_WORDS = {"where": "où", "when": "quand", "why": "pourquoi", "how": "comment", "what": "qu'", "who": "qui"}
RELATIVE_WORDS = ("who", "that", "which")  # who: people; which: things; that: either
PLEASE = {"tu": "s'il te plaît", "vous": "s'il vous plaît"}

# Noun-noun compounds: english modifier | its French after the head | the heads it goes with
COMPOUNDS_TABLE = """
    kitchen | de cuisine | table chair knife clock lamp cupboard window door
    orange | d'orange | juice
    apple | de pomme | juice
    apple | aux pommes | pie cake
    chocolate | au chocolat | cake ice_cream cookie
    strawberry | à la fraise | ice_cream
    strawberry | aux fraises | pie
    tomato | à la tomate | soup
    chicken | au poulet | soup sandwich salad
    cheese | au fromage | sandwich pizza
    coffee | à café | cup
    tea | à thé | cup
    wine | à vin | glass
    water | d'eau | bottle
    milk | de lait | bottle
    school | d'école | bag
    bus | de bus | ticket driver
    train | de train | ticket
    taxi | de taxi | driver
    piano | de piano | teacher
    guitar | de guitare | teacher
    paper | en papier | bag plate cup
    birthday | d'anniversaire | cake gift
"""
COMPOUNDS: dict[tuple[str, str], str] = {}  # (modifier, head) -> French after the head
for _line in COMPOUNDS_TABLE.strip().splitlines():
    _modifier, _french, _heads = (part.strip() for part in _line.split("|"))
    for _head in _heads.split():
        COMPOUNDS[_modifier, _head.replace("_", " ")] = _french
