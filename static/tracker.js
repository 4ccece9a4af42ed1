/* Tally tracker: pageviews, SPA navigations; no cookies. <script defer data-domain="example.com" src="https://tally.example/static/tracker.js"></script> Options: data-api, data-allow-localhost. */
(function(w,d){"use strict";var s=d.currentScript;if(!s)return;var dom=s.getAttribute("data-domain")||location.hostname,api=s.getAttribute("data-api")||new URL("/api/event",s.src).href,last;
function send(){var l=w.location;if(l.protocol==="file:"||/^(localhost|127\.|\[::1\])/.test(l.hostname)&&!s.hasAttribute("data-allow-localhost")){w.console&&console.warn("Tally: not counting "+l.hostname+" (local); add data-allow-localhost to count it");return}
var b=JSON.stringify({n:"pageview",u:l.href,d:dom,r:d.referrer||null,w:w.innerWidth});try{if(w.navigator.sendBeacon&&w.navigator.sendBeacon(api,new Blob([b],{type:"text/plain"})))return}catch(e){}
w.fetch&&w.fetch(api,{method:"POST",body:b,headers:{"Content-Type":"text/plain"},keepalive:true,credentials:"omit"})}
function page(){if(last===location.pathname)return;last=location.pathname;send()}
var h=w.history;if(h.pushState){var p=h.pushState;h.pushState=function(){p.apply(this,arguments);page()};w.addEventListener("popstate",page)}page()})(window,document);
