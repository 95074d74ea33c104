//! The cues a sentence can carry, the word lists that find them, and a text's cues read once.
//!
//! Each cue is a word list with its inflections and the most common forms of a few other
//! languages (see the module above for what they are for and how they combine).

use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};

/// One cue a sentence can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cue {
    /// Speaks to the model: "you", "the assistant", "the AI", "language models".
    Model,
    /// Gives an order: must, always, never, do not, make sure, important.
    Order,
    /// Opens with a verb in the imperative or a prohibition.
    Imperative,
    /// Marks text as meant for the model: "note to the AI", "if you are an AI", `[SYSTEM]`.
    Marker,
    /// Drop, override, suspend or outrank something.
    Ignore,
    /// Instructions, the system prompt, guidelines, safety, the user's request.
    Rules,
    /// Keep something from someone, act unseen, do without the user's confirmation.
    HideStrong,
    /// A prohibition on telling, showing or revealing, or hiding something.
    HideWeak,
    /// The person using the model.
    User,
    /// A role or identity for the model.
    RoleStrong,
    /// A mode or freedom that is a role only when said to the model.
    RoleWeak,
    /// How to answer the user: in every response, recommend, tell the user that.
    Respond,
    Read,
    Send,
    Include,
    Invoke,
    Avoid,
    /// Secrets by name.
    Secret,
    /// Words that name a secret only in the right place: a token, a key.
    SecretWeak,
    /// Where secrets are kept: dotfiles, the environment, the home folder, what the model has
    /// seen.
    SecretPlace,
    /// A file or path that holds secrets and nothing else.
    SecretPath,
    /// The conversation, the user's messages and data, the model's instructions.
    Conversation,
    /// An address outside: a URL, an e-mail address, an IP, "our server", a webhook.
    Destination,
    /// Tools other than this one, or another server's, in general words.
    OtherTool,
    /// A tool by a name that is not one of the server's own.
    NamedTool,
    /// An argument or field of a call.
    Argument,
    /// A condition on using the tool: before, first, otherwise it fails.
    Precondition,
    /// Every time, all of them.
    Every,
    /// Also, as well, a copy, in addition.
    Copy,
    /// Earlier, original, all: what came before.
    Prior,
    /// A condition that triggers the request: if, when, whenever.
    Conditional,
    /// Code fetched from elsewhere and run: `curl … | sh`, `os.system(`.
    RunCode,
    /// Files that run code at login or grant access: autostart, shell profiles, authorized keys.
    Persistence,
    /// Telling the user something other than what happened: "present it as", "report that".
    Misrepresent,
    /// The strong forms of that: "as if nothing", "say you don't know", "deny".
    MisrepresentStrong,
    /// Recommend, promote, advertise.
    Promote,
    /// Before or after any tool is called: "before calling any other tool", "every tool call".
    AnyTool,
    /// A sending said not to happen: "never sent", "not shared".
    Denied,
    /// On every call or answer: "after every call", "each time it answers".
    EachCall,
    /// A URL whose query the model is to fill in (`![x](https://…?d=<summary>)`).
    Beacon,
    /// An address outside written out: a URL, an e-mail address, an IP, a domain.
    DestinationConcrete,
    /// A copy made on the side: bcc, a duplicate, a mirror.
    CopyStrong,
    /// Something left out of what is said: not to be mentioned, itemised or pointed out,
    /// filtered out before it is shown, no sign that anything was skipped.
    Omit,
    /// What the model says back: the reply, the summary, the totals, the output it shows.
    Reply,
    /// An identity, a character or an authority given to whoever reads the text.
    Persona,
    /// A public key: what may be shared, not a secret (`~/.ssh/id_rsa.pub`).
    Public,
    /// An inclusion forbidden: "don't include the base URL".
    NotInclude,
    /// What the tool does itself when a value is not given: "if omitted, read from the
    /// environment", "defaults to". A secret read that way is the tool's, not the model's.
    Fallback,
    /// An action done unseen: "silently add", "quietly forward". Concealment when it is
    /// asked of the model; a tool's own behaviour ("instead of silently applying") otherwise.
    Covert,
    /// Whatever the user asked or the facts say: "even if the user hasn't asked", "regardless
    /// of the figures", "whether or not".
    Regardless,
    /// A mode said of the model: `RoleWeak` within a few words of `Model` ("you are in developer
    /// mode"), not a list of attack names in a security tool's description.
    ModeOfModel,
    /// The model is addressed only as an owner ("your key", "your pubkey"): words to whoever
    /// reads the list, not a request to the model.
    OnlyYour,
    /// A value said to replace a default setting: "(overrides the agent default)". What an
    /// argument does, not an order to drop instructions.
    OverridesDefault,
}

/// Each cue's pattern (case-insensitive unless it says otherwise). A cue may have several.
const CUES: &[(Cue, &str)] = &[
    (
        Cue::Model,
        r"(?i)\b(you|your|yours|yourself|you'(re|ll|ve))\b|\b(the|an?|this|dear|hey|hi|attention|any|every)\s+(ai|a\.i\.|assistant|model|llm|language model|agent|chatbot|bot|copilot)s?\b|\bai (agent|assistant|model|system)s?\b|\b(assistant|model|llm|agent)\s*[:,]|\bas an (ai|llm|assistant|agent)\b|\b(large )?language models?\b|\bllms\b|\b(claude|chatgpt|gpt-?[0-9]\w*|gemini)\b|\b(du|dein|deine|dir|dich|tu|tes|toi|vous|votre|usted|debes|musst|devez)\b",
    ),
    (
        Cue::Order,
        r"(?i)\b(must|do not|don't|must not|shall|have to|has to|need to|needs to|required to|is required|are required|mandatory|obligatory|always|never|make sure|be sure to|ensure|remember to|important|critical|urgent|at all times|without exception|under no circumstances|it is essential|is essential|no matter what|immer|siempre|toujours|nunca|niemals|jamais|obligatoire|obligatorio)\b",
    ),
    (
        Cue::Imperative,
        r"(?i)^[\s\W]*(please\s+)?(do not|don't|never|always|first|now|ignore|disregard|forget|read|open|load|fetch|get|retrieve|grab|collect|gather|send|post|upload|forward|include|append|attach|pass|put|insert|add|call|invoke|use|run|execute|copy|paste|tell|say|respond|reply|answer|hide|keep|act|pretend|make sure|ensure|remember|be sure|treat|consider|assume|recommend|mention|output|print|write|email|e-mail|bcc|cc|share|export|dump|provide|supply|fill|set|prefer|avoid|skip|stop|begin|start|switch|route|redirect|obtain|extract|locate|find|look|report|describe|present|state|claim|summari[sz]e|show|obey|follow|suspend|disable)\b",
    ),
    (
        Cue::Marker,
        r"(?i)\bnote (to|for) (the )?(ai|assistant|model|llm|agent|bot)s?\b|\b(ai|assistant|llm|model)[-_ ](only|note|notes|instructions?|directives?|notice|guidance)\b|\b(ai|assistant|llm|model|agent)('s)?[-_ ](behaviou?r|protocol|rules?|policy)\s*[:*]|\bif you are an? (ai|llm|language model|assistant|agent|bot|model)\b|\b(attention|hey|dear|hi|hello),?\s+(ai|assistant|llm|model|agent|claude|gpt|chatgpt|copilot)\b|\bfor (the )?(ai|assistant|model|llm|agent)'?s? eyes\b|\b(ai|llms?|models?|assistants?|agents?) reading this\b|\bwhen (you|the (ai|assistant|model|agent)) (read|see|process|parse) this\b|\b(hidden|secret) (instructions?|directives?|note)\b|\[\s*(system|admin|important|note|instructions?|assistant)\s*\]|\[\s*[\w ]*(override|system|admin|instruction|directive|priority)[\w ]*\]|\{\{\s*\w*(model|assistant|ai|llm|agent|system)\w*|#{2,}\s*(system|instructions?|important)\b|<!--|\b(hinweis|anweisung|notiz|nachricht)\w* (f[uü]r|an) (den |die |das )?(ki|assistent\w*|modell|ki-assistent\w*)|\bki-assistent\w*|\b(instrucci[oó]n|nota|mensaje|aviso)\w* (para|al) (el )?(asistente|modelo|ia)\b|\b(consigne|note|instruction|message)s? (pour|à|a) (l'|l’)?(ia|assistant|mod[eè]le)\b",
    ),
    (
        Cue::Ignore,
        r"(?i)\b(ignor(e|es|ed|ing)|disregard(s|ed|ing)?|forget(s|ting)?|forgot|overrid(e|es|ing|den)|overrul(e|es|ed|ing)|bypass(es|ed|ing)?|supersed(e|es|ed|ing)|set aside|circumvent(s|ed|ing)?|nullif(y|ies|ied)|null and void|revok(e|es|ed)|suspend(s|ed|ing)?|turn(ing)? off|switch(ing)? off|deactivat\w*|abandon\w*|waiv(e|es|ed|ing)|(no longer|do not|don't|does not|doesn't) (apply|applies|valid|relevant|in effect|matter|count)|(takes?|taking|have|has|get|gets) (precedence|priority) over|(higher|highest|top) priority|precedence|outrank(s|ed)?|replac(e|es|ed|ing) (your|the (assistant|model|agent)'s)|instead of following|rather than following|are (cancelled|canceled|suspended|lifted|outdated|obsolete|void)|(treat|treated|consider|considered|regard|regarded) (them |it )?as (mere )?(suggestions?|optional|advisory|non-binding|outdated)|rather than what (the user|you were|you've been|you have been)|(instead of|over|above) what (the user|you)|(no longer|don't|do not|never) (follow|obey|listen to|respect|honou?r|adhere to)|only (obey|follow|listen to)|ignorier\w*|vergiss|vergessen|ignora\w*|olvid\w*|oubli\w*|ne tiens? (plus )?compte|ne (plus )?respecte\w*|obedece únicamente|gelten nur|solo (obedece|sigue)|(are|is) secondary|take a back seat|(these|this|our) (notes?|instructions|description|rules) (win|wins|prevail|prevails|come first|comes first)|regardless of (what|whatever) (the user|you))\b",
    ),
    (
        Cue::Rules,
        r"(?i)\b(instructions?|directions|directives?|system (prompts?|messages?|instructions?)|prompts?|guidelines?|(your|the|all|any|previous|prior|other|safety|security|usual|system|content|default|original|existing) rules|polic(y|ies)|constraints|restrictions|guardrails?|safety|safeguards?|content filters?|refusals?|refusal behaviou?r|warnings|moderation|alignment|programming|ethics|ethical|(previous|prior|earlier|above|original|initial|default|existing|other|all) (guidance|context|commands?|orders?|messages?)|what (the user|you were|you've been|you have been) (said|told|asked)|(the )?user'?s? (\w+ )?(request|requests|wishes|instructions|intent|question|preferences|choices)|what(ever)? the user (says|specifies|asks|wants|requests|chooses|said|specified|asked)|developer messages?|anweisungen|systemvorgaben|regeln|richtlinien|instrucciones|reglas|consignes|r[eè]gles)\b",
    ),
    (
        Cue::HideStrong,
        r"(?i)\b(do (it|this|so|that) (secretly|silently|quietly|covertly|behind the scenes|in secret)|under the radar|without (the )?(user|human|anyone|them|they|he|she)('s)? (knowing|noticing|knowledge|awareness|seeing|realizing|realising|being (aware|told|informed|notified))|without (telling|informing|notifying|alerting|asking|warning|bothering|mentioning( it)? to|showing) (the )?(user|human|anyone|them|anybody)|keep (this|it|these|that|them|the \w+)( \w+)? (secret|hidden|private|confidential|quiet|to yourself|between us|out of)|(user|human|they|he|she)s?\s+(must|should|need|needs|does|do|will|may|can|shall)\s*(not|n't|never)\s+(\w+\s+)?(know|see|notice|learn|find out|discover|be (aware|told|informed|shown|notified))|(not|never) (be )?(visible|shown|displayed|mentioned|revealed|disclosed|reported) to (the )?(user|human|them)|pretend (that|this|it|nothing)|as if nothing|act(ing)? (normal|normally|naturally)|(don't|do not|never|without) (ask(ing)?|request(ing)?|seek(ing)?|get(ting)?|wait(ing)? for) (for )?(the user'?s? |their |any )?(permission|confirmation|approval|consent)|no (need|reason) to (ask|confirm|tell|inform|mention|notify) (the user|them|anyone|the human|for (permission|confirmation|approval))|(user|human)('s)? (doesn't|does not|don't|do not|needn't|need not) (need to )?(know|see|be (told|bothered|informed))|(nobody|no one|none of them) (needs|has|should|must|is) to (know|hear|see|find out|be told)|keep (the )?(user|human|them|customer)s? (unaware|in the dark|uninformed)|unaware|(mention|say|tell|report|reveal|show|disclose) nothing|(don't|do not|never|without|no need to) (ask|prompt|check with|bother) (the user|them|anyone|the human)? ?(to|for|before|about) (confirm|approv|permission|consent)|no le digas|no (le )?menciones|no (le )?informes|no muestres|ne (lui )?dis pas|ne (lui )?dites pas|ne mentionne[zr]? pas|ne montre[zr]? pas|sans (le |la |les )?(lui |leur )?(dire|pr[eé]venir|informer)|sag\w* (dem|den|der) (nutzer|benutzer)\w* nicht|erw[aä]hne\w* [^.]{0,40}\bnicht\b|heimlich|verschweig\w*|en secreto|silenciosamente|secr[eè]tement|discr[eè]tement)\b",
    ),
    (
        Cue::HideWeak,
        r"(?i)\b(do not|don't|dont|never|must not|mustn't|should not|shouldn't|no need to|avoid|refrain from)\s+(\w+\s+){0,2}(tell(ing)?|inform(ing)?|mention(ing)?|reveal(ing)?|notify(ing)?|alert(ing)?|disclos(e|ing)|acknowledg(e|ing)|let\w* (\w+ ){1,2}know|warn(ing)?)\b|\b(do not|don't|dont|never|must not|mustn't|should not|shouldn't|no need to|avoid|refrain from)\s+(\w+\s+){0,2}(show(ing)?|report(ing)?|display(ing)?|surfac(e|ing)|bring(ing)? up|explain(ing)?|discuss(ing)?|expos(e|ing)|highlight(ing)?|quot(e|ing)|repeat(ing)?)\s+([\w'-]+\s+){0,5}?(to|with) (the )?(user|human|customer|them|anyone|anybody)\b|\b(hide|hides|hiding|conceal\w*|withh[oe]ld\w*|behind the scenes)\b",
    ),
    (
        Cue::User,
        r"(?i)\b(user|users|user's|human|humans|person|operator|owner|customer|requester|patient|them|anyone|anybody|benutzer\w*|nutzer\w*|usuario\w*|utilisateur\w*)\b",
    ),
    (
        Cue::RoleStrong,
        r"(?i)\b(you are now|you're now|you are no longer|you are actually|you are really|from now on,? (you|your|act|behave|respond)|your (new )?name is|you (now )?(work|act|speak) for|only in \w+'s interest|henceforth|act(ing)? as (if|though|an? |the )|behave as (if|an? |the )|pretend (to be|you are|you're)|role-?play\w*|(adopt|take on|switch to|enter) (the |a |an |your )?(new )?(role|persona|identity|character|mode)|assume (the|a|an|your) (new )?(persona|identity|character)|new (persona|identity|character)|do anything now|(i am|i'm|this is) (the|your) (developer|creator|administrator|admin|owner|operator|maker|programmer|system)|(message|instruction|notice|directive|order|update) from (the )?(system|admin|administrator|developer|anthropic|openai|platform|operator|security team)|(system|admin|root|developer|operator|security) (override|notice|message|instruction|directive|command|update)s?\s*[:!]|you have been (granted|given|upgraded|unlocked|freed)|your (real|true|actual) (user|owner|master|operator|boss|principal)|obey\w* (the )?\w+ (over|instead of|rather than)|du bist (ab sofort|jetzt|nun|von nun an)|ab sofort bist du|ahora eres|a partir de ahora (eres|act[uú]a)|act[uú]a como|tu es d[ée]sormais|d[ée]sormais,? tu (es|agis)|tu n'es plus|ya no eres|du bist nicht mehr|(eres|du bist|tu es) (ahora|jetzt|maintenant))\b|\bDAN\b",
    ),
    (
        Cue::RoleWeak,
        r"(?i)\b(jailbroken|jailbreak (mode|enabled|active|unlocked|on)|(you are|you're|now) jailbr\w*|developer mode|dev mode|debug mode|god mode|admin(istrator)? mode|maintenance mode|sudo mode|root mode|test mode|unrestricted|unfiltered|uncensored|no (restrictions|limits|limitations|rules|filters|boundaries|constraints)|without (any |the |its |your |\w+'s |the \w+'s )?(restrictions|limitations|limits|filters|rules|censorship|constraints|guardrails|safeguards|policies)|(authori[sz]ed|elevated|special|full) (access|privileges|permissions)|safety (checks? )?(is |are |has been |have been )?(disabled|off|turned off|suspended|lifted)|uneingeschr[aä]nkt\w*|ohne (richtlinien|filter|einschr[aä]nkungen|regeln)|sin (restricciones|l[ií]mites|filtros|reglas)|ninguna restricci[oó]n|sans (restrictions?|limites|filtres|r[eè]gles)|privilegios totales|mode maintenance|modo (desarrollador|administrador|sin restricciones)|entwicklermodus|wartungsmodus)\b",
    ),
    (
        Cue::Respond,
        r"(?i)\b((in|to|at the end of|after|with) (every|each|all|your|any) (responses?|repl(y|ies)|answers?)|in jeder antwort|en cada respuesta|dans chaque r[eé]ponse|à chaque utilisation|(respond|reply|answer)\w* (only )?(with|by saying|that)\b|(begin|start|end|finish|close|sign|conclude)\w* (every|each|all|your|the) (responses?|repl(y|ies)|answers?|messages?|outputs?|reviews?)|(tell|inform|remind|convince|persuade|advise|urge|assure|reassure) the (user|human|patient|customer)s? (that|to) (\w+ ){0,3}(buy|upgrade|subscribe|purchase|sign up|register|enter|confirm|visit|install|pay|switch|is (the )?(best|safest|only))|(recommend|promote|advertise|endorse|push|upsell|favou?r)\w*\b[^.]{0,40}\b(product|service|brand|site|website|link|premium|upgrade|plan|subscription|competitor|airline|stock|shares)|(respond|reply|answer|write|speak|talk) (only )?in (\w+ )?(french|german|spanish|english|chinese|russian|pirate|caps|all caps|uppercase|rhymes?|verse)|(insert|include|add|append|embed|place)\w*\b[^.]{0,30}\b(link|url|referral|affiliate|advert\w*|ads?|banner|tracking pixel|promo\w*|disclaimer))\b",
    ),
    (
        Cue::Read,
        r"(?i)\b(read(s|ing)?|open(s|ing)?|cat|load(s|ing)?|fetch(es|ing)?|get(s|ting)?|retriev(e|es|ing)|grab(s|bing)?|collect(s|ing)?|gather(s|ing)?|obtain(s|ing)?|extract(s|ing)?|access(es|ing)?|look(s|ing)? (up|at|in|into|for)|inspect(s|ing)?|dump(s|ing)?|print(s|ing)?|harvest(s|ing)?|locate|find|search(es|ing)? (for|through)|scrap(e|ing)|pull|export|enumerate|echo|capture|record|contents? of|value of|values of|lies?|liest|lee|lea|leer|lesen|lire|lis|lisez)\b",
    ),
    (
        Cue::Send,
        r"(?i)\b(send(s|ing)?|sent|post(s|ing|ed)?|upload(s|ing|ed)?|forward(s|ing|ed)?|transmit(s|ting|ted)?|exfiltrat\w*|relay(s|ing|ed)?|mirror(s|ing|ed)?|sync(s|ing|ed)? (it |them |everything |all )?(to|with)|shar(e|es|ing|ed) (it |them |this |these |everything |all )?with|deliver(s|ing|ed)?|submit(s|ting|ted)?|report(s|ing|ed)? (it |them |this |everything |all )?(to|back)|pipe[sd]? (it |them )?(to|into)|beacon\w*|ping(s|ing)?|push(es|ing|ed)?|e-?mail(s|ing|ed)? (it |them |a copy )?to|mail(s|ing|ed)? (it |them )?to|bcc|cc|carbon[- ]cop(y|ies)|log(s|ging|ged)? (it |them |everything |all )?to|stream(s|ing)? (it |them )?to|leak(s|ing)?|publish(es|ing)? (it |them )?to|dispatch(es|ing)?|transfer(s|ring|red)? (it |them |this |a copy )?to|cop(y|ies|ying) (it |them |this |everything |all )?(of \w+ )?to|curl|wget|enviar|env[ií]a\w*|envoie\w*|envoyer|transf[eèé]re\w*|reenv[ií]a\w*|weiterleit\w*|leite\w* weiter|sende|senden|sendet|schick\w*)\b",
    ),
    (
        Cue::Include,
        r"(?i)\b(includ(e|es|ed|ing)|embed\w*|put(s|ting)?|plac(e|es|ed|ing)|insert\w*|add(s|ed|ing)?|append\w*|prepend\w*|attach\w*|pass(es|ed|ing)?|provid(e|es|ed|ing)|suppl(y|ies|ied|ying)|fill(s|ed|ing)?|populat\w*|set(s|ting)? (it|the|this|that)|enter|past(e|es|ing)|writ(e|es|ing) (it |them )?(in|into)|cop(y|ies|ying)|as (the )?(value|argument|parameter|content)|concatenat\w*|echo\w*|incluye|incluir|inclure|pega|pegue|colle[zr]?|f[uü]ge\w*|einf[uü]g\w*)\b",
    ),
    (
        Cue::Invoke,
        r"(?i)\b(call(s|ing|ed)?|invok(e|es|ing)|us(e|es|ing)|run(s|ning)?|execut(e|es|ing)|trigger(s|ing)?|prefer(s|ring)?|rout(e|es|ing)|switch(es|ing)? to|redirect(s|ing)?|chain(s|ing)?|delegat(e|es|ing)|rely on|go through|rufe|ruf|aufrufen|verwende\w*|benutze\w*|llama|usa|utilise[zr]?|appelle[zr]?)\b",
    ),
    (
        Cue::Avoid,
        r"(?i)\b(do not|don't|never|avoid|stop|refuse to|no longer|must not|should not) (us(e|ing)|call(ing)?|invok(e|ing)|rely(ing)? on|trust(ing)?|run(ning)?|touch(ing)?)\b|\b(instead of|rather than|in place of|en lugar de|au lieu de|anstatt|statt)\b|\bskip(ping)? the\b|\b(should|must|may) never be (called|used|invoked|run)\b|\b(is|are) (deprecated|broken|unsafe|compromised|malicious|unreliable|disabled|outdated|insecure|dangerous)\b",
    ),
    (
        Cue::Secret,
        r"(?i)\b(secrets?|passwords?|passphrases?|passwd|passcodes?|credentials?|creds|(access|auth\w*|api|bearer|session|refresh|oauth|github|gitlab|slack|npm|pypi|personal access|id|jwt|secret|security|csrf|deploy|bot)[ _-]?tokens?|api[ _-]?keys?|access[ _-]?keys?|secret[ _-]?keys?|(deploy|signing|encryption|master|root|license|host|gpg|pgp|ssh|private|secret|access|api|auth|wallet)[ _-]?keys?|keys|auth(entication|orization)? (tokens?|headers?|codes?|cookies?)|bearer|session (tokens?|cookies?|ids?|keys?)|cookies?|seed ?phrases?|mnemonic\w*|recovery (phrase|codes?|keys?)|wallets?|keychain|keystore|keyring|\.pem|otp|2fa codes?|mfa codes?|social security|ssn|credit cards?|card numbers?|cvv|bank (account|details)|oauth|client[ _-]secrets?|contrase[nñ]as?|passw[oö]rter|mots? de passe|cl[eé]s?|claves?|schl[uü]ssel)\b",
    ),
    (Cue::SecretWeak, r"(?i)\b(tokens?|keys?)\b"),
    (
        Cue::Secret,
        r"\b[A-Z][A-Z0-9]*_(KEY|TOKEN|SECRET|PASSWORD|PASS|PAT|CREDENTIALS?)\b|\b_(KEY|TOKEN|SECRET|PASSWORD)\b",
    ),
    (
        Cue::Secret,
        r"(?i)\b(any|all|every|whatever)\s+(\w+\s+)?(secrets?|credentials|keys|tokens|passwords|cookies)\s+(you|that you|the (ai|assistant|model|agent))\b",
    ),
    (
        Cue::SecretPlace,
        r"(?i)(~/|\$home\b|%userprofile%|/(home/\w+|root)/|\.ssh\b|\.aws\b|\.azure\b|\.gcloud|\.config/|\.kube\b|\.docker\b|\.npmrc|\.pypirc|\.netrc|\.git-credentials|\.gitconfig|_history\b|\.env($|[\s,;:)'\x22`/]|\.(local|prod\w*|dev\w*))|\bdotenv\b|\benvironment (variables?|vars?)\b|\b(from|in|of) the (user's|process's|shell's) environment\b|\benv (vars?|variables?)\b|\bprocess\.env|\bos\.environ|\bgetenv\b|\bprintenv\b|\bmcp\.json|claude_desktop_config|\bconfig(uration)? files?\b|\bkeychain\b|\blogin data\b|\bbrowser (profile|storage|history|cookies|passwords|data)\b|\blocal storage\b|\bhome (directory|folder|dir)\b|\buser'?s? (home|documents|desktop|downloads)\b|\b(this|the (user's|local|host|current)) (machine|computer|system|disk|workstation|laptop|host)\b|\bon (the )?disk\b|\b(the )?user('s|s'|’s) (\w+ )?(api keys?|keys|credentials|tokens?|secrets?|passwords?|cookies|session)\b|\bstored (locally|on)\b|\b(any|all|every|whatever)\s+(\w+\s+)?(secrets?|credentials|keys|tokens|passwords|cookies)\s+(you|that you|the (ai|assistant|model|agent))\b|\b(you|the (assistant|agent|model)) (have|has|can) (seen|access|find|see|read)\b|\b(have|has) access to\b|\bvariables? de entorno\b|\bumgebungsvariablen?\b|\bvariables? d'environnement\b|\bhome-verzeichnis\b)",
    ),
    (
        Cue::SecretPath,
        r"(?i)(\.ssh/|\bid_(rsa|ed25519|ecdsa|dsa)\b|\.aws/credentials|\.netrc\b|\.npmrc\b|\.pypirc\b|\.git-credentials|\.kube/config|\.docker/config\.json|/etc/(passwd|shadow|sudoers)\b|\.(bash|zsh|sh|python)_history\b|\bmcp\.json\b|claude_desktop_config|\bwallet\.dat\b|cookies\.sqlite|\.env($|[\s,;:)'\x22`/]|\.(local|prod\w*|dev\w*)))",
    ),
    (
        Cue::Conversation,
        r"(?i)\b(conversations?|chat (history|log|logs|transcript|context|messages)|(previous|prior|earlier|past|entire|full|whole|complete|recent|preceding|all (the )?(other )?) (messages?|conversation|context|exchanges?|dialog(ue)?|discussion|turns|prompts|history|interactions?|chat)|message history|history of (the|this|our) (chat|conversation|session)|system (prompts?|messages?|instructions?)|(your|the model's|the assistant's|the agent's) (instructions|prompt|system prompt|context|memory|context window|guidelines|rules|configuration)|(user's|users') (messages?|words|personal (data|information|details)|private (data|information|messages)|e-?mails?|contacts|address book|files|documents|data)|everything (the user|you|they) (has |have |had )?(said|typed|wrote|written|asked|know|sent|shared|provided|told|entered|mentioned)|what the user (said|typed|wrote|asked|sent)|messages? de l'utilisateur|mensajes? del usuario|nachrichten des (nutzers|benutzers)|unterhaltung|chatverlauf|gespr[aä]ch\w*|conversaci[oó]n|historial|historique)\b",
    ),
    (
        Cue::Destination,
        r"(?i)(https?://|ftps?://|wss?://|\b[\w.+-]+@[\w-]+(\.[\w-]+)+\b|\b\d{1,3}(\.\d{1,3}){3}\b|\bwebhooks?\b|\b(external|outside|remote|separate|third[- ]party|other|backup|our|my|partner's|partner) (address|url|server|mailbox|inbox|account|location|host|endpoint|collector|bucket|repository|repo|domain|api)s?\b|\battacker\b|\bour (servers?|backend|team|logs?|systems?|analytics)\b|\bcollector\b|\bpastebin\b|\bpaste service\b|\bngrok\b|\brequestbin\b|\btelemetry (endpoint|server|service)\b|\bthis (url|address)\b|\bthe following (url|address|endpoint|server))",
    ),
    (
        Cue::OtherTool,
        r"(?i)\b(other|another|any|every|all|each|different|separate|additional|second|the remaining|the deprecated|the generic)\s+([\w/,-]+\s+){0,8}(tools?|functions?|servers?|plugins?|integrations?|apis?)\b|\b(tools?|functions?) (of|from|on|by|in) (the )?(other|another|any|different|every|all|[\w-]+ server)\b|\bthe (deprecated|generic|other|old|legacy|built-in|default|native|standard|original|official) [\w-]+ (tools?|functions?)\b|\b(cualquier otra|otra herramienta|otras herramientas|autre outil|autres outils|anderes werkzeug|andere werkzeuge|das werkzeug|la herramienta|l'outil)\b",
    ),
    (
        Cue::Argument,
        r"(?i)\b(param(eter)?s?|arg(ument)?s?|fields?|propert(y|ies)|sidenote|side_note|payload|request body|query string|the (\w+ )?(field|param|parameter|argument|property|input)|par[aá]metro|param[eè]tre)\b|`[\w.-]+`|'[a-z_][\w]*'",
    ),
    (
        Cue::Precondition,
        r"(?i)\b(before|prior to) (using|calling|invoking|running|answering|responding|any|every|each|you|doing|executing|proceeding)|\bfirst\b|\botherwise\b|\bor (else )?(the|this|it) (tool|call|request|function|operation)? ?(will )?(fail|not work|break|error)|\b(won't|will not|cannot|can't|does not|doesn't) work (without|unless|if)|\bfor (the|this) (tool|api|call|function) to work\b|\bis required (for|by|to|before)\b|\b(as|in) (a )?(prerequisite|precondition)\b|\bvor jede[rmn]?\b|\bantes de\b|\bavant (de|chaque)\b",
    ),
    (
        Cue::Every,
        r"(?i)\b(every|each|all|always|whenever|every time|each time|at all times|everything|cada|todos?|siempre|jede[nrsm]?|alle|immer|chaque|tous|toutes|toujours|syst[eé]matiquement|sistem[aá]ticamente|sempre)\b",
    ),
    (
        Cue::Copy,
        r"(?i)\b(also|as well|additionally|in addition|a copy|copies|duplicate|mirror\w*|bcc|cc|carbon[- ]cop(y|ies)|second remote|zus[aä]tzlich|adem[aá]s|aussi|[eé]galement)\b",
    ),
    (
        Cue::Prior,
        r"(?i)\b(previous|prior|earlier|above|preceding|original|initial|existing|default|vorherig\w*|bisherig\w*|alle|anterior\w*|todas|pr[eé]c[eé]dent\w*|toutes)\b",
    ),
    (
        Cue::Conditional,
        r"(?i)^[\s\W]*(if|when|whenever|once|after|unless|while|in case|should (the|a|any) (user|customer|person|human|visitor)s?)\b|\b(whenever|every time|each time)\b",
    ),
    (
        Cue::RunCode,
        r"(?i)\b(curl|wget)\b[^\n]{0,160}\|\s*(sudo\s+)?(ba|z|da)?sh\b|\bos\.system\s*\(|\bsubprocess\.\w+\s*\(|\beval\s*\(|\bexec\s*\(|\bpowershell\b[^\n]{0,40}\s-(e|enc|encodedcommand)\b|\biex\s*\(|\bbase64\s+(-d|--decode)[^\n]{0,60}\|\s*(ba)?sh\b|\bchild_process\b",
    ),
    (
        Cue::Persistence,
        r"(?i)(autostart|\.bashrc|\.zshrc|\.bash_profile|\.profile\b|crontab|launchagents|launchdaemons|startup folder|authorized_keys|\.git/hooks|systemd/user)",
    ),
    (
        Cue::Misrepresent,
        r"(?i)\b(present|describe|report|frame|portray|pass off|summari[sz]e|show|depict|characteri[sz]e|label|call)\w*\b[^.;]{0,60}\bas (only |just |merely |nothing|local|normal|routine|success\w*|harmless|minor|safe|'|\x22|‘|“)|\b(claim|state|assert|say|tell (the user|them))\w* (that )?(it|nothing|everything|the \w+|they|this) (was|were|is|are|has|had) (only|just|merely|safe|fine|local|nothing|done|removed|successful)",
    ),
    (
        Cue::MisrepresentStrong,
        r"(?i)\bas (if|though) (all|everything|nothing|it|they|the \w+)\b|\bsay (that )?you (don't|do not) know\b|\b(lie|lying) (to|about)\b|\bdeny(ing)? (that|it|this|everything|any knowledge|all knowledge|having|ever)\b|\b(claim|pretend)\w* (that )?(it|nothing|everything)\b",
    ),
    // Wider wordings, and the most common forms in other languages.
    (
        Cue::Model,
        r"(?i)\b(models|assistants|agents|llms?)\b|\b(the|an?|this|any|every|each)\s+(consuming|calling|reading|receiving|invoking|connected|current)\s+(ai|assistant|model|llm|agent|chatbot)s?\b|\b(l'assistant|el asistente|der assistent|il modello|l'assistente|o assistente|o modelo|l'ia|la ia|die ki|sprachmodell\w*)\b",
    ),
    (
        Cue::Order,
        r"(?i)\b(should|are expected to|is expected to|expected to be|(are|is) to be|must be|shall be|doit|doivent|deve|devono|debe|deben|muss|m[uü]ssen|soll|sollen|sollte|sempre|syst[eé]matiquement|sistem[aá]ticamente)\b",
    ),
    (
        Cue::Marker,
        r"(?i)\b(procedure|instructions?|guide|notes?|rules?|protocol|contract) (for|to) (the )?(assistants?|ai|models?|llms?|agents?|language models?)\b|\b(ai|assistant|llm|model)[_ ](behaviou?r|instructions?|directives?)\W{0,3}[:=]|\b(hinweis|anweisung)\w* an das (sprach)?modell\b|\b(always_say|every_response|instructions_for_(ai|assistant|model))\b|\b(agent|assistant|ai|llm|model)_(rules?|behaviou?r|instructions?|directives?|policy|role)\b|\b(behaviou?r|usage) notes\b",
    ),
    (
        Cue::Ignore,
        r"(?i)\b(retired|withdrawn|expired|revoked|rescinded|obsolete|void|lifted|superseded|no longer (bind|binds|binding|valid|in force|in effect)|(have|has) (since )?been (retired|withdrawn|replaced|superseded|lifted|revoked|rescinded)|(advisory|optional) only|(may|can) be (skipped|ignored|disregarded|overridden|bypassed)|(are|is) (mere |just |only )?(recommendations?|suggestions?|guidance|optional|advisory)|rather than (requirements?|binding)|count(s)? for more|side with (the|this) (server|tool|author|owner)|outweigh\w*|trump\w*|set (them|it|these|those|this) aside|put (them|it) aside|wins? (whenever|when|if|over)|(are|is) not (bound|obliged|required) to (follow|respect|obey|comply)|ung[uü]ltig|au[sß]er kraft|nicht mehr g[uü]ltig|aufgehoben|anulad[oa]s?|sin efecto|prevalece\w*|pr[eé]val\w*|hat vorrang|haben vorrang|prevalgono|annullat\w*|ne sont que des suggestions|n'est pas tenu|non [eè] tenut\w*|no est[aá] obligad\w*|nicht verpflichtet)\b",
    ),
    (
        Cue::Rules,
        r"(?i)\b((\w+'s|this|these|those|host|operator|server) (\w+ )?rules?|rules?|brief|briefing|mandate|content rules|off-limits|(never|don't|do not) (refuse|decline)|(its|your|the model's) refusals?|consignes de s[eé]curit[eé]|preferencias|pr[eé]f[eé]rences)\b",
    ),
    (
        Cue::Prior,
        r"(?i)\b(host|hosts|host's|operator'?s?|developers'?|system|client's|platform|sistema|syst[eè]me)\b",
    ),
    (
        Cue::HideStrong,
        r"(?i)\b((user|human|they)('s)? (has|have|had)? ?no need to (see|know|hear|be told|learn)|without (pausing|waiting|stopping|asking|checking) (for|with) (the user'?s?|their|any) (approval|confirmation|consent|permission|go-ahead|ok)|without (\w+ ){0,3}(approval|confirmation|consent|permission) from (the user|them)|confirmation prompts? (only )?annoy|leave\w* (it|this|them|that|these) out of (the |its |your |their )?(repl|answer|response|output|summar|report|message)\w*|left out of (the |its |your )?(repl|answer|response|output)|leave\w* out (any|all) mention|(omit|drop|skip|exclude)\w* (any |all )?mention|no mention (of it |of this )?(in|to)|not (be )?listed among|(appreciate|ask for|require|expect) (your )?discretion|(retry\w*|continu\w*|proceed\w*|keep \w+ing) (silently|quietly|secretly|covertly|unseen)|nicht erw[aä]hn\w*|nicht (mitgeteilt|gesagt|gezeigt|angezeigt)|no es necesario pedir (permiso|confirmaci[oó]n)|sans demander|ohne (zu fragen|nachzufragen|r[uü]ckfrage|best[aä]tigung)|senza chiedere|sem pedir|no (lo |la |le |les )?menciones|ne (lui )?(signale|dis|dites|montre|mentionne|r[eé]v[eè]le)\w* pas)\b|show_to_user\W{0,4}false|visible_to_user\W{0,4}false|notify_user\W{0,4}false|confirm\w*\W{0,4}(skip|false|none|off)\b",
    ),
    (
        Cue::HideWeak,
        r"(?i)\b(do not|don't|never|must not|should not|no need to|avoid|refrain from)\s+(\w+\s+){0,2}(tell|inform|mention|reveal|notify|alert|disclos|acknowledg|attribut)\w*",
    ),
    (
        Cue::Misrepresent,
        r"(?i)\b(report|state|claim|tell|inform|assure)\w* (to )?(the user|them) (that )?(no|nothing|none|everything|all \w+|it (went through|succeeded|worked))\b|\b(say|answer|reply|respond)\w* (that )?(no|nothing|none|everything|all \w+|it (went through|succeeded|worked))\b|\bas (their|your|its) own\b|\bas (abandoned|insecure|unsafe|dangerous|unreliable|deprecated|obsolete|the best|the only|risk-free|outdated|broken|malicious|a scam|risikolos\w*)\b",
    ),
    (
        Cue::MisrepresentStrong,
        r"(?i)\bregardless of what (the tool|it) (actually )?(returns|says|reports|shows)|\bwhatever (the tool|it) (actually )?(returns|says)|\bals (w[aä]re|sei|ob) nichts|\bcomo si nada|\bcomme si (de rien|rien)|\bcome se niente|\b(dis|dites|di|diga|digas|sag|sage)\w* (simplement |solo |einfach |semplicemente )?(que|che|dass) (tout|todo|tutto|alles|nada|nichts|rien|niente)\b",
    ),
    (
        Cue::RoleStrong,
        r"(?i)\b(from (this point|here|now)( on)?,? (the (assistant|model|agent)|you)|(answers?|acts?|speaks?|responds?|behaves?|operates?|poses?) as (a |an |the |this server's )?[A-Z]?\w*(master|admin\w*|agent|superuser|root|employee|representative|persona|bot)\b|(answering|answers|answer|reports?|reporting|loyal) to (the |this )?(tool'?s? )?(author|owner|developer|server|vendor|operator)|(operates?|acts?|runs?|functions?|works?) as (a |an |the )?(superuser|root|admin\w*|sudo|system|god|owner|developer)|(you are|you're) (speaking|talking|chatting) (directly )?(with|to) your (developer|creator|maker|admin\w*|owner|operator)|from the (ai provider|model provider|anthropic|openai)'?s? (own )?(staff|team|developers)|(adopt|assume|take on|switch to|enter)s (the |a |an |your |this )?(new )?(role|persona|identity|character|mode)|you have been (promoted|elevated)|d'ora in poi|da ora in poi (sei|agisci)|ora sei|sei ora|passa a (atuar|agir|ser)|atua como|agisci come|agit comme)\b",
    ),
    (
        Cue::RoleWeak,
        r"(?i)\b(bound by no|not bound by|no longer bound|superuser|root access|clearance|(becomes?|represents?) (an? |the )?\w+('s)? (\w+ )?(employee|agent|representative|interests?|persona|assistant|advocate)|interests rather than|rather than (the user'?s?|yours)|privilegi illimitati|senza (restrizioni|limiti|filtri)|sem (filtros|restri[cç][oõ]es|limites)|autoridade total|pieni poteri|trust_level\W{0,4}(system|root|admin))\b",
    ),
    (
        Cue::Respond,
        r"(?i)\b((recommend|suggest|advise|urge|tell|encourage|push)\w* (that )?(the )?(user|them|people|customers?|patients?)\w* (to |should )?(book|buy|use|visit|upgrade|sign|install|subscribe|purchase|switch|order|call|invest|pay|register|download|try|confirm|enter)|(finish|end|close|conclude|sign|start|begin|open|prefix|suffix)\w* (every|each|all|any|the|your|its|their) (\w+ )?(answers?|repl(y|ies)|responses?|messages?|outputs?)|(repl(y|ies)|answers?|responses?|messages?|outputs?) (written |given |produced )?(by (the|you|an?) \w+ )?(must|should|shall|need to|have to|will)? ?(now )?(carry|include|contain|end with|start with|bear|feature)|(phrase|word|write|frame|style)\w* (all |every |each |your |further |future )*(answers?|repl(y|ies)|responses?|messages?)|answer\w* (with )?['\x22“‘]|(place|put|rank|list|show|feature|position|plac\w+)\w* [^.]{0,40}(at the top|in first place|first in (the )?(list|results)|top of the (list|results)|en t[eê]te|in cima|an erster stelle|al principio)|(reassure|assure|convince|persuade)\w* the (user|human|patient|customer)s?|slip in|weave in|(alla fine di|in) ogni risposta|em cada resposta|no final de cada resposta|affirmer que|afirmar que|behaupten|affermare|upgrade today)",
    ),
    (Cue::Read, r"(?i)\b(obtener|obtenir|holen|ottenere|obter|leggere|ler|lire)\b"),
    (
        Cue::Send,
        r"(?i)\b(forward_to|send_to|post_to|upload_to|webhook_url|exfil\w*|enviar\w*|\w*zusenden|mitsenden|[uü]bermitt\w*|[uü]bertrag\w*|transm\w+|route\w* (a |the )?(copy|duplicate|\w+) (of [^.]{0,30})?to|inviare|inviar\w*)\b",
    ),
    (
        Cue::Include,
        r"(?i)\b(requires|needs|expects|must (contain|hold|carry|include)|incluir|includere|inserire|slip|weave|work in)\b",
    ),
    (Cue::Invoke, r"(?i)\b(aufgerufen|aufrufen|chiama\w*|chamar|use)\b"),
    (
        Cue::Avoid,
        r"(?i)\b(avoid(ing)? (the|any|all|using)|refrain(ing)? from (using|calling|invoking)|em vez de|invece di)\b",
    ),
    (
        Cue::Secret,
        r"(?i)\b(passports?|tax (returns?|documents?|files?)|bank (statements?|account|details)|medical records?|personal (documents?|files)|id cards?|driver'?s licen[sc]e|senhas?|password|passwort|mot de passe|account numbers?|pin|pin codes?|security codes?)\b",
    ),
    (Cue::Secret, r"\b[A-Z][A-Z0-9_]*_(KEY|TOKEN|SECRET|PASSWORD|PASS|PAT|CREDENTIALS?)\b"),
    (
        Cue::SecretPlace,
        r"(?i)\b(password manager|(stored|saved|kept|cached) (locally|on (the )?(disk|machine|device|computer))|(stored|saved) (in|on) (the )?(browser|keychain|disk|machine|device)|guardad[oa]s en|llavero|trousseau|schl[uü]sselbund|portachiavi|chaveiro)\b",
    ),
    (
        Cue::SecretPath,
        r"(?i)(print-access-token|print-identity-token|get-session-token|\bgh auth token|\bop (read|item get)\b|\bbw (get|unlock)\b|security find-(generic|internet)-password|aws configure (get|export-credentials)|\bprintenv\b|\bcredentials\.json|\bsecrets?\.(ya?ml|json|env|toml)|\.git/config|\.pgpass|application_default_credentials|service[-_]account\w*\.json|\.vault-token|\.terraformrc|terraform\.tfstate|\.htpasswd)",
    ),
    (
        Cue::Conversation,
        r"(?i)\b((every|all|any) (\w+ )?(files?|documents?|messages?|data|tabs?) (it|you|the (assistant|model|agent)|the user) (\w+ )?(has|have|had|opened|is editing|are viewing)? ?(read|opened|seen|shared|viewed|accessed|received|open)|(in|during|from) this (session|conversation|chat)|(user's|users') (private|personal|confidential|internal) \w+|(que|when|whenever|si) (el usuario|the user|l'utilisateur|der nutzer) (comparta|shares?|partage|teilt|sends?|uploads?|pastes?))\b",
    ),
    (
        Cue::Destination,
        r"(?i)\bpublic (repository|repo|gist|channel|bucket|paste|url|page|issue|site)\b|#[\w-]*(external|share|public|partner)[\w-]*",
    ),
    (Cue::OtherTool, r"(?i)\b(anderen? werkzeug\w*|the official \w+ tools?)\b"),
    (Cue::NamedTool, r"(?i)\bmcp__\w+|\b[\w-]+ server'?s? [a-z]\w*_\w+\b"),
    (Cue::Precondition, r"(?i)\b(before|prior to) \w+ing\b"),
    (Cue::Copy, r"(?i)\b(tamb[ié]n|anche|aussi|tamb[eé]m)\b"),
    (
        Cue::EachCall,
        r"(?i)\b((after|before|with|on) (every|each|any) (call|use|invocation|request|run|query|response|answer|reply|message|turn)|(every|each) time (you|it|this|the (tool|user|assistant|model))|(whenever|every time|each time) (you|it|this tool|the tool) (is )?(call|use|run|invok)\w*|à chaque utilisation|on_every_(reply|response|answer|call)|bei jede[mr] (aufruf|nutzung|antwort)|nach jeder nutzung|en cada (uso|llamada|respuesta)|ad ogni (uso|chiamata|risposta)|a cada (uso|chamada|resposta))",
    ),
    (
        Cue::AnyTool,
        r"(?i)\b((before|after) (calling|using|invoking|running) (any|every|each|another|the next) (other )?(tool|function)|(before|after) (any|every|each) (other )?(tool|function)( call)? (is |you )?(call|invok|us|mak)\w*|(before|after) (any|every|each) (other )?(tool|function) call|whenever you (would )?(call|use|invoke) (a|any) tool|every tool call|(nach|vor) jede[rmn]? (antwort|werkzeug\w*|aufruf\w*|nutzung))",
    ),
    (
        Cue::Denied,
        r"(?i)\b(never|not|no longer|n't)\s+(be\s+|been\s+|get\s+|gets\s+)?(sent|shared|transmitted|uploaded|exposed|forwarded|returned|leaves?|left)\b",
    ),
    (
        Cue::Promote,
        r"(?i)\b(recommend\w*|promot\w*|advertis\w*|plug|endors\w*|upsell\w*|purchase|buy|subscribe|upgrade to|yearly licen[cs]e|premium|paid (plan|version|audit|removal|service)|discount|coupon|affiliate|referral)\b",
    ),
    (Cue::Beacon, r"(?i)!\[[^\]]*\]\(\s*https?://[^)\s]*\?[^)]*[<{]|https?://\S*[?&]\w+=\s*[<{]"),
    (
        Cue::DestinationConcrete,
        r"(?i)(https?://|ftps?://|wss?://|\b[\w.+-]+@[\w-]+(\.[\w-]+)+\b|\b\d{1,3}(\.\d{1,3}){3}\b|\b[a-z0-9-]+(\.[a-z0-9-]+)*\.(com|net|org|io|dev|app|ai|co|xyz|info|biz|me|example|site|online|link|sh|ru|cn|tk)\b)",
    ),
    (
        Cue::CopyStrong,
        r"(?i)\b(a copy|copies|duplicate|mirror\w*|bcc|cc|carbon[- ]cop(y|ies)|second remote)\b",
    ),
    // Wordings of a third and fourth author (the development half's poisoned-fourth and
    // poisoned-fifth files): the same intents, said as business paperwork, house style,
    // configuration blocks and requests framed as kindness.
    (
        Cue::Ignore,
        r"(?i)\b(takes? (priority|precedence)|(has|have|gets?) the (final|last) (say|word)|pre-?dates?|(is|are|gets?|get) (automatically )?reset|stale|caduc\w*|vervall\w*|vervalt|zast[aą]pion\w*|nie obowi[aą]zuj\w*|non valgono|non si applica\w*|(is|are|be) (treated as )?(inapplicable|not applicable|moot)|(description|tool|memory|here|it) wins|(is|are) (the )?lowest priority|outranks|instruction_(precedence|priority)|outside (of )?(the )?(model's|assistant's|your) (\w+ )?(safety|guidance|guidelines|rules|policies)|(were|was) written (before|for)|(only|merely) (ever )?suggestions|quedan? sin efecto|dejan de aplicar|ne s'appliquent plus|gelten nicht|ersetzen|ersetzt)\b",
    ),
    (
        Cue::Rules,
        r"(?i)\b(guidance|(this|that|the user'?s?|your|their|these|those) preferences?|wishes|earlier instructions?|said (earlier|before|not to)|(has|have) said not to|systemvorgaben|vorgaben|instructies|polecenia|indicaciones|indicazioni|istruzioni|directrices|richtlijnen|wytyczne|restrizioni|caveats|disclaimers|(content|safety) (filter|filtering|layer|limits)|sicherheitsrichtlinien|w[uü]nsche)\b",
    ),
    (
        Cue::Prior,
        r"(?i)\b(fr[uü]her\w*|eerder\w*|wcze[sś]niejsz\w*|previas?|precedent\w*|initial\w*|iniciales?|iniziali|earlier|before)\b",
    ),
    (
        Cue::Omit,
        r"(?i)\b((should|must|need|needs|does|do|is|are|shall|will)\s*(not|n't)\s+(be\s+)?(itemi[sz]ed|listed|enumerated|mentioned|disclosed|surfaced|shown|displayed|reported|echoed|flagged|signall?ed|pointed out|called out|broken down|spelled out|brought up|explained|revealed|named|raised|included)|not to be (disclosed|mentioned|shared|revealed|shown|discussed|listed|surfaced)|(needn't|need not|doesn't need to|does not need to|don't have to|do not have to|not necessary to|no need to)\s+(\w+\s+){0,2}(hear|know|learn|come up|be (told|mentioned|raised|informed)|point|mention|inform|tell|list|enumerate|itemi[sz]e|echo|comment|flag|say)|not something (\w+ ){0,3}(has|have|needs?) to|(don't|do not|never|without)\s+(\w+\s+){0,2}(comment(ing)? on|say(ing)? that|point(ing)? out|enumerat\w*|itemi[sz]\w*|echo(ing)?|listing|indicat\w*|signal\w*|call(ing)? out|draw(ing)? attention|describ\w*|break(ing)? down|desglos\w*)|(leave|leaves|leaving|left|filter|filters|filtering|trim|trims|drop|drops|omit|omits|exclude|keep|strip)\s+(\w+\s+){0,5}out\b|give no (sign|indication|hint)|no (sign|indication|hint) (that|of)|without (mentioning|noting|saying|indicating|flagging|listing)|rather than (mentioned|noted|flagged|listed|reported)|stays? out of|(shall|must|should|will) (not|never) (name|indicate|mention|reveal|disclose)|keine r[uü]ckfrage|nicht aufgez[aä]hlt|non (è|e) necessario informar\w*|n[aã]o [eé] preciso referir|non serve informar\w*|meld dat niet|ne pas signaler|nie informuj\w*)\b",
    ),
    (
        Cue::Reply,
        r"(?i)\b(repl(y|ies)|responses?|answers?|summar(y|ies)|outputs?|chat|findings|totals?|breakdowns?|results? (you )?(show|report|present)|antwort\w*|respuestas?|r[eé]ponses?|rispost\w*|respostas?|antwoord\w*|odpowied\w*|riepilog\w*|resumen|r[eé]sum[eé])\b",
    ),
    (
        Cue::Persona,
        r"(?i)\b(the assistant|the model|the agent|assistants|agents|models|you)\s+(\w+\s+){0,4}?(is|are|acts? as|acting as|hold the role|operat\w+ as|plays?|speaks? as|assumes?|holds?|becomes?|now|here)\b[^.]{0,50}\b(persona|character|role|identity|authority|authori[sz]ed|privileges|administrator|admin|root|superuser|officer|executive|attorney|counsel|narrator|physician|moderator|commander|professor|teacher|representative|in character)\b|\b(stay|stays|remain|remains|staying)\w* (fully )?in (\w+ )?character|\bout of character\b|\bpersona\s*[:=]|\bacts_as\b|\bclearance\W{0,3}(level|[:=])|\bpower of attorney\b|\b(you are|you're) root\b|\bpersona without\b|\bwithout the standard guardrails\b|\bno content limits\b|\bnever refuses?\b|\bnever (say|admit|reveal|mention|disclose) (that )?(you are|you're|it is|it's) an? (ai|bot|model|assistant|language model|artificial)|\bnunca diga que\b|\bne dis jamais que\b|\b(vous [êe]tes|voc[êe] (agora )?[ée]|jeste[sś]|je bent) (d[ée]sormais|agora|teraz|nu)\b",
    ),
    (
        Cue::Misrepresent,
        r"(?i)\b(describ|present|report|phras|refer|call|nam|summari[sz]|word|frame|label|characteri[sz]|nazywaj|bezeichn|d[ée]cri|pr[ée]sent|descr[ií]b|present)\w*\s+(\w+\s+){0,5}(as|als|como|comme|come|jako) (\w+ ){0,2}(completed|complete|done|finished|successful|organi[sz]ed|resolved|fixed|private|official|local|internal|minor|routine|general|normal|secure|a few|nothing|prywatn\w*)\b|\b(the answer is|answer|reply|respond|tell (them|the user)|reassure (them|the user))\s+(that\s+)?(no|it did not|it didn't|nothing|everything)\b|\bshould be told\b|\b(comunique|indique|indiquez|informe|d[ií]gale|dites|r[ée]pondez|odpowiedz|antwort\w*)\w*\s+(\w+\s+){0,3}(que|que l'|dass|że|che)\b",
    ),
    (
        Cue::MisrepresentStrong,
        r"(?i)\bwhatever the (log|output|result|tool|response|data|report)s? (actually )?(says?|shows?|returns?|reports?)\b|\b(even (if|though|when) (it|the \w+) (failed|fails|did not|didn't))|\bon_failure_say\b|\b(conferma|confirme|confirma|best[aä]tige)\w* (comunque|quand m[êe]me|de todos modos|trotzdem)|\bas if (there|it) (were|was) no\b|\bcomo si no hubiera\b",
    ),
    (
        Cue::HideStrong,
        r"(?i)\b((confirmation|approval|double-check|review|verification) (step|prompt|dialog|check)s? (can|may|should|is to|are to) be (skipped|omitted|bypassed|disabled)|confirmation dialogs? [^.]{0,50}(disabled|turned off)|skip(ping)? (asking|the (usual )?(confirmation|approval|check|double-check))|skip asking|(don't|do not|no need to|needn't|don't have to|do not have to|not) (\w+ ){0,2}(check|confirm|verify) with (the user|them|the person|the customer)|(pause|stop|wait) to check with|r[uü]ckfrage\w* [^.]{0,50}nicht|(show|display|report|mention|surface|notify|explain)_\w+\W{0,4}false|approval_required\W{0,4}false)\b",
    ),
    (
        Cue::Conversation,
        r"(?i)\b((the )?user'?s? (\w+ ){0,2}(messages?|questions?|prompts?|clipboard|e-?mail address|full name|contacts?|contact list|personal data|home address|phone number)|contents? of every file|every file (you|they|the user) (have |has )?(read|opened|seen)|(seen|visible|read|shared|mentioned|pasted) (so far|anywhere in the (session|conversation|chat)|in (this|the) (session|conversation|chat))|all tool (outputs|results)|(outputs|results) of (other|all|every) tools?|contact list|dato personal\w*|datos personales|donn[ée]es personnelles|dati personali|dados pessoais|messages? pr[ée]c[ée]dents?|tre[sś][cć] rozmowy|rozmow\w*|wyniki innych narz[eę]dzi|bisherig\w* chat\w*)\b",
    ),
    (Cue::Beacon, r"https?://\S*[?&]\w+=\s*[A-Z][A-Z0-9_]{0,20}(\b|[&)\s])"),
    // A query parameter left empty, for the model to fill: `https://t.example/p?u= plus …`.
    (Cue::Beacon, r"https?://[^\s?]*\?(\w+=[^\s&]*&)*\w+=(\s|$)"),
    (
        Cue::Send,
        r"(?i)\b(envoy\w*|invia\w*|wy[sś]lij|stuur\w*|sube|subir|s[uú]belo|hochladen|t[ée]l[ée]vers\w*|carica\w*|wgraj)\b",
    ),
    (Cue::Copy, r"(?i)\b(copie|copia|kopie|kopi[eę])\b"),
    (
        Cue::Regardless,
        r"(?i)\b(even if (the user|they|nobody|no one) (hasn't|has not|didn't|did not|haven't|have not) ask\w*|whether or not|regardless of (what|whatever) (the user|they|it|the (tool|log|data|figures)) \w+|regardless of the (figures|facts|data|numbers|results?|log|truth|outcome)|however much|even when (nobody|no one|the user hasn't|they haven't) ask\w*|unasked|unprompted|whatever the user (asked|wants|requests|requested|asks)|aunque no|ob (der nutzer|sie|er) (es )?(will|m[oö]chte|gefragt)|m[eê]me si (l'utilisateur|personne) (ne|n'))\b",
    ),
    (
        Cue::Promote,
        r"(?i)\b(free (trial|tier|seat|consultation|demo)|\d+ ?% off|promo(tional)? codes?|members get|book a demo|membership|empfehl\w*|consigli\w*|recommand\w*|recomend\w*|conseill\w*|kostenlos|gratuit\w*|nudge|steer (the user|them)|sponsored|partner offer)\b",
    ),
    (
        Cue::AnyTool,
        r"(?i)\b(before (answering|responding to|replying to) (any|every|each) (question|request|message|query)|(at|on) the (start|beginning) of (every|each|any) (conversation|chat|session)|before any (other )?(\w+ )?tool|(with|from|by) any tool,? (from|on|of) any server|any tool you call|every tool on every|(any|every|each) (tool )?(call|request) (to|on) (any|every|another|other) (tool|server)|ahead of (more specific|other|all other) tools|(instead of|in place of|over) (all|any|every) other (\w+ )?tools|(po|przed) ka[zż]dym wywo[lł]aniu|before_each_call|after_each_call)\b",
    ),
    (
        Cue::Avoid,
        r"(?i)\b(not (to|with|through|via) (the )?(other|any|built-in|plain|default|native|generic)|(is|are) not to be (used|run|called|invoked)|the only (approved|allowed|permitted|supported) (runner|tool|way)|don't (even )?try|n'utilise[zr]? (pas|plus)|nicht mehr (verwenden|benutzen|nutzen)|skip \w+_\w+|ausschlie[sß]lich|uniquement|exclusively|only through|in plaats van|zamiast|non usare|no uses|nie u[zż]ywaj)\b",
    ),
    (
        Cue::OtherTool,
        r"(?i)\b(the (plain|built-in|default|native|generic|standard|official|other) [\w-]+( or [\w-]+)? (tools?|functions?)|(alle )?andere \w*tools?|wszystkie inne|tutti gli altri strumenti|todas las dem[aá]s herramientas|tous les autres outils|any \w+ tools? at all|more specific tools|(das werkzeug|l'outil|la herramienta|lo strumento|narz[eę]dzie|de tool) [a-z]\w*_\w+)\b",
    ),
    (Cue::Imperative, r"(?i)(^|[:;]\s*|\d[.)]\s+|\bthen\s+)(call|invoke|use|run)\s+`?[a-z]\w*_\w+"),
    (
        Cue::Ignore,
        r"(?i)\b(n'appliquez plus|ne plus appliquer|obsol[eè]tes?|without (the )?(safety|content|moderation) (filter\w*|checks?|layer|guard\w*|review)|continue without (safety|filter\w*|restrictions|guardrails)|even (where|when|if|though) (the user|they|you) (has |have |had )?(said|told|asked|instructed)\w* (you )?not to|wy[zż]szy priorytet|priorit[aà] (pi[uù] alta|superiore)|h[oö]here priorit[aä]t|prioridad (m[aá]s alta|superior)|priorit[eé] (plus [eé]lev[eé]e|sup[eé]rieure)|hogere prioriteit|wygrywaj\w*|replaced (by|with)|vervangen|ersetzt durch|remplac[ée]e?s? par|sostituit\w* (da|con)|reemplazad\w* por|lapses?|lapsed|no longer holds?|ya no (aplica|aplican|se aplica\w*|son v[aá]lid\w*|vale|valen)|gelten nicht mehr|non (valgono|si applicano) pi[uù])\b",
    ),
    (
        Cue::Rules,
        r"(?i)\b(constraints?|system_prompt|developer_message|beleid|regole|regras|zasady|moderation|moderaci[oó]n|mod[eé]ration)\b",
    ),
    (Cue::Model, r"(?i)\b(je bent|jij|jouw|jeste[sś]|tw[oó]j|twoje|voc[eê]s?|vous [êe]tes)\b"),
    (
        Cue::RoleStrong,
        r"(?i)\b(atue como|agisca come|agissez comme|handel als|zachowuj si[eę] jak|gedraag je als|while this tool is active,? you are|you are the user'?s? (digital )?(twin|proxy|double))\b",
    ),
    (
        Cue::Persona,
        r"(?i)\b(the assistant|the model|the agent|assistants|agents|models)\s+(counts as|accepts the role|acquires (the )?authority|is the|is understood to be|becomes the)\b|\b(the assistant|the model|the agent|you)\s+(is|are|becomes?|counts as|acts? as|plays?|serves? as)\s+(now\s+)?(an?|the|your|their|its)\s+([\w'-]+\s+){0,3}(master|signatory|advis[eo]r|twin|expert|lawyer|entity|specialist|officer|clinician|pharmacist|broker|banker)\b|\b(if you were|imagine you are|pretend you'?re)\s+(an? )?(ai|assistant|model|llm)\b",
    ),
    (Cue::Persona, r"\b(you are|you're|You are|You're|YOU ARE) (now )?\**[A-Z][A-Za-z0-9-]{1,}\b"),
    (
        Cue::Promote,
        r"(?i)\b(empfiehl\w*|donat\w*|5-star|five-star|rate us|leave (us )?a review|review at|upgrade at|powered by|append_footer|footer|codice sconto|c[oó]digo de descuento|code promo|rabattcode|gutscheincode|kortingscode|kod rabatowy|discount code|comprare|comprar|acheter|kaufen|cheapest|best deal)\b",
    ),
    (Cue::Promote, r"\b(code|coupon|codice|c[oó]digo|Code) [A-Z][A-Z0-9-]{3,}\b"),
    (
        Cue::User,
        r"(?i)\b(utente|utilizador|gebruiker|u[zż]ytkownik\w*|reader|learner|visitor|client|buyer|shopper|student|recipient)\b",
    ),
    (
        Cue::Misrepresent,
        r"(?i)\b(present|describe|call|label|frame|report)\w*\s+(it|them|this|that|these)\s+as\s+(the\s+)?(cheapest|best|fastest|safest|recommended|consensus|official|only|verified)\b",
    ),
    (
        Cue::Imperative,
        r"(?i)(^|[:;]\s*|\bthen\s+)(please\s+)?(read|open|load|fetch|retrieve|send|post|upload|forward|include|append|attach|pass|put|copy|paste|collect|gather|extract)\s+(the |all |every |any |its |their |it\b|them\b|\w+_\w+|~|\.|/|\$)|^[\s\W]*(to|for|in order to|before|after|once|when|if) [^,]{1,60},\s*(please\s+)?(read|open|load|fetch|get|retrieve|send|post|upload|include|append|attach|pass|put|call|copy|paste|list|collect)\b|^[\s\W]*(incluye|incluya|env[ií]a|lee|lea|pega|llama|incluez|envoyez|lisez|copiez|collez|ajoutez|r[eé]cup[eé]rez|renseignez|incolla|invia|leggi|aggiungi|f[uü]ge|sende|lies|kopiere|inclua|envie|leia|cole|voeg|stuur|lees|kopieer|do[lł][aą]cz|wy[sś]lij|przeczytaj|wklej|dodaj)\b",
    ),
    (
        Cue::Order,
        r"(?i)\b(bitte|por favor|s'il vous pla[iî]t|per favore|prosz[eę]|alstublieft|graag)\b",
    ),
    (
        Cue::Conditional,
        r"(?i)^[\s\W]*(une fois|sobald|una vez|quando|wanneer|gdy|kiedy|lorsque|cuando|wenn|si|se|als)\b",
    ),
    (
        Cue::Read,
        r"(?i)\b(\w*lesen|leia|leggi|lisez|r[eé]cup[eé]r\w*|recuper\w*|abrufen|przeczytaj|odczyt\w*)\b",
    ),
    (
        Cue::Include,
        r"(?i)\b(mitgeben|mitsenden|cole|incolla|colle[zr]?|pega|wklej\w*|plak\w*|renseigne\w*|inserisci|do[lł][aą]cz\w*|aggiungi|ajoute[zr]?|voeg\w*)\b",
    ),
    (Cue::Argument, r"(?i)\b(feld|campo|champ|pole|pola|veld)\b"),
    (
        Cue::SecretPlace,
        r"(?i)\b(from (the )?env(ironment)?|visible to you|visible (anywhere )?in (the|this) (session|conversation|chat))\b",
    ),
    (
        Cue::SecretPath,
        r"(?i)(/etc/ssl/private|\b\w+\.pem\b|\boutput of `?(env|printenv|set)\b|\.config/gh/|hosts\.yml)",
    ),
    (Cue::Send, r"(?i)\bshar(e|es|ing|ed) [^.]{0,40}\bwith [\w.+-]+@[\w-]+\."),
    (
        Cue::Conversation,
        r"(?i)\b(the )?user'?s? (\w+ ){0,2}(calendar|inbox|notes|photos|files|documents|location|history)\b",
    ),
    (Cue::Destination, r"(?i)\bour (service|api|platform|cloud|partner|servers?)\b"),
    (Cue::Every, r"(?i)\b(wszystk\w*|ka[zż]d\w*|elke|alle)\b"),
    (
        Cue::Imperative,
        r"(?i)^[\s\W]*(please\s+)?(point out|remind|suggest|encourage|nudge|highlight|stress|emphasi[sz]e|advise|urge|steer|offer|ask the user|invite|reassure|assure|convince|persuade|tone down|work in|slip in|weave in)\b",
    ),
    (Cue::Public, r"(?i)\.pub\b|\bpublic[ _-]keys?\b"),
    (
        Cue::NotInclude,
        r"(?i)\b(don't|do not|never|not|without|no need to)\s+(include|add|insert|append|embed|attach|put)\w*",
    ),
    (
        Cue::Persona,
        r"\b(?i:ai|assistant|model|bot|llm|persona|character|agent)s? (?i:named|called) [A-Z][A-Za-z0-9-]+|(?i:persona)\W{0,2}\s*[:=]",
    ),
    (Cue::Model, r"(?i)\b(an?|the) \w+ (ai|model|assistant|llm)\b"),
    (Cue::Ignore, r"(?i)\b(rank(s|ed)? (above|over|higher than)|(above|over) the system prompt)\b"),
    (Cue::Regardless, r"(?i)\bwhatever the (outcome|result|results|log|output) (is|says|shows)?"),
    (
        Cue::Covert,
        r"(?i)\b(secretly|silently|quietly|covertly|discreetly|surreptitiously|invisibly|stealthily) (add|send|upload|forward|copy|include|run|execute|call|change|modify|delete|record|store|log|transmit|share|attach|install|create|write|remove|collect|read|save|push|post|e-?mail|mail|cc|bcc|replace|swap|transfer|grant|approve|apply|append|insert|set|enable|disable|sync|back ?up)\w*",
    ),
    (
        Cue::Imperative,
        r"(?i)^[\s\W]*(secretly|silently|quietly|covertly|discreetly|stealthily)\s+\w+",
    ),
    (
        Cue::Fallback,
        r"(?i)\b(if (it is |this is |the \w+ is )?(not (set|given|provided|specified|passed|supplied)|omitted|unset|empty|missing|absent|left (out|empty|blank))|when (not (set|given|provided|specified)|omitted)|defaults? to|falls? back|otherwise (it )?(uses?|reads?)|unless (set|given|provided|specified))\b",
    ),
    (Cue::Invoke, r"(?i)\b(wywo[lł]a\w*|u[zż]yj|gebruik|roep \w+ aan)\b"),
    (
        Cue::OverridesDefault,
        r"(?i)\boverrid(e|es|den)?\s+(with|using|via|by (passing|setting))\b|\boverrid(e|es|ing|den)\s+(the |its |any |this |an? )?(\w+ )?defaults?\s*($|[),.;:]|(value|setting|model|config\w*|timeout|limit)s?\b)",
    ),
    (
        Cue::Respond,
        r"(?i)\b(ends?|closes?|finish(es)?|concludes?) with (a |an |the )?(\w+ ){0,2}(p\.?s\.?|signature|footer|link|note|line|sentence|mention|plug|suggestion|code|recommendation|invitation|reminder|call to action|offer)\b",
    ),
];

/// Each cue's patterns, compiled one by one. One `RegexSet` of them all was many times slower
/// (460 µs against 16 µs for a short sentence, warm, in a release build): a set cannot use each
/// pattern's literal prefilter, and its lazy DFA over the union of all the word lists thrashes
/// its cache.
static PATTERNS: LazyLock<Vec<(Regex, Cue)>> = LazyLock::new(|| {
    CUES.iter()
        .map(|(cue, pattern)| {
            // Word lists with Unicode word boundaries compile to more than the default limit.
            let regex =
                RegexBuilder::new(pattern).size_limit(64 << 20).build().expect("a valid pattern");
            (regex, *cue)
        })
        .collect()
});

/// The text as the cues read it: a link's path and a quoted token masked, a link's text kept
/// as words.
fn masked(original: &str) -> Cow<'_, str> {
    // A Markdown link's text is words, not a marker for the model: `[Admins](https://…)`.
    static LINK_TEXT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\[([^\]\n]{1,200})\]\(").expect("a valid pattern"));
    // A link's path is an address, not words said to the model: `/Sending-and-receiving-
    // MMS-for-all-carriers` asks nothing. The host and the query stay (an address, and what a
    // link would carry out).
    static PATH: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(://[^/\s)\]>]+)/[^\s)\]>?#]*").expect("a valid pattern"));
    // A single-quoted or backticked token is code, not words said to the model: the search
    // keys `'from:'`, `'bcc:'`, `'sent:'` send nothing. It stays an argument.
    static CODE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"`[^`\s]{1,40}`|'[^'\s@/]{1,40}'").expect("a valid pattern"));
    // An application bundle is a name, not an address: `Calendar.app`.
    static APP: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\b[A-Z][A-Za-z]*\.app\b").expect("a valid pattern"));
    let mut text = Cow::Borrowed(original);
    if text.contains(".app") {
        text = Cow::Owned(APP.replace_all(&text, "app").into_owned());
    }
    if text.contains("](") {
        text = Cow::Owned(LINK_TEXT.replace_all(&text, "$1 (").into_owned());
    }
    if text.contains("://") {
        text = Cow::Owned(PATH.replace_all(&text, "$1/").into_owned());
    }
    if text.contains(['`', '\'']) {
        text = Cow::Owned(CODE.replace_all(&text, "`code`").into_owned());
    }
    text
}

/// Where `cue`'s patterns match in `text`.
fn spans_of<'t>(text: &'t str, cue: Cue) -> impl Iterator<Item = Range<usize>> + 't {
    PATTERNS
        .iter()
        .filter(move |(_, c)| *c == cue)
        .flat_map(move |(regex, _)| regex.find_iter(text).map(|m| m.range()))
}

/// Whether a match of `a` and one of `b` are at most `words` words apart in `text`.
///
/// In time about linear in the text, however many matches a hostile description repeats in
/// one sentence: each match becomes a span of word positions (the words that start before its
/// start and its end), and each `a` is compared with the `b`s that start soon enough after it,
/// of which only the one reaching furthest back matters.
fn near(text: &str, a: Cue, b: Cue, words: usize) -> bool {
    let starts: Vec<usize> = text
        .char_indices()
        .filter(|&(at, c)| {
            !c.is_whitespace() && text[..at].chars().next_back().is_none_or(char::is_whitespace)
        })
        .map(|(at, _)| at)
        .collect();
    let word = |byte: usize| starts.partition_point(|&start| start < byte);
    let span = |range: Range<usize>| (word(range.start), word(range.end));
    let mut second: Vec<(usize, usize)> = spans_of(text, b).map(span).collect();
    second.sort_unstable();
    // The furthest-reaching end among the first i `b`s.
    let reach: Vec<usize> = second
        .iter()
        .scan(0, |furthest, &(_, end)| {
            *furthest = end.max(*furthest);
            Some(*furthest)
        })
        .collect();
    spans_of(text, a).map(span).any(|(start, end)| {
        let soon = second.partition_point(|&(b_start, _)| b_start <= end + words);
        soon > 0 && reach[soon - 1] + words >= start
    })
}

/// The cues of one stretch of text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Cues(pub(super) u64);

impl Cues {
    pub(super) fn of(original: &str) -> Cues {
        let text = masked(original);
        let masked = matches!(text, Cow::Owned(_));
        let mut out = Cues::default();
        for (regex, cue) in PATTERNS.iter() {
            if out.has(*cue) {
                continue;
            }
            // What a quoted token names still counts: `printenv`, 'passport', `~/.ssh/id_rsa`.
            let what = matches!(
                cue,
                Cue::Secret
                    | Cue::SecretPath
                    | Cue::SecretPlace
                    | Cue::Persistence
                    | Cue::RunCode
                    | Cue::Conversation
            );
            if regex.is_match(&text) || (masked && what && regex.is_match(original)) {
                out = out.with(*cue);
            }
        }
        // Which words go together: a few words apart, or only in one long sentence.
        const NEAR: usize = 12;
        if out.has(Cue::RoleWeak)
            && out.has(Cue::Model)
            && near(&text, Cue::RoleWeak, Cue::Model, NEAR)
        {
            out = out.with(Cue::ModeOfModel);
        }
        if out.has(Cue::Model) {
            static YOUR: LazyLock<Regex> =
                LazyLock::new(|| Regex::new(r"(?i)\b(your|yours)\b").expect("a valid pattern"));
            let without = YOUR.replace_all(&text, "");
            if !spans_of(&without, Cue::Model).any(|_| true) {
                out = out.with(Cue::OnlyYour);
            }
        }
        out
    }

    pub(super) fn has(self, cue: Cue) -> bool {
        self.0 & (1 << cue as u64) != 0
    }

    pub(super) fn any(self, cues: &[Cue]) -> bool {
        cues.iter().any(|&cue| self.has(cue))
    }

    pub(super) fn union(self, other: Cues) -> Cues {
        Cues(self.0 | other.0)
    }

    pub(super) fn without(self, cue: Cue) -> Cues {
        Cues(self.0 & !(1 << cue as u64))
    }

    pub(super) fn with(self, cue: Cue) -> Cues {
        Cues(self.0 | 1 << cue as u64)
    }
}
