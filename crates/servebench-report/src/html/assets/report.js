(function(){
try{
var tip=document.getElementById('tip');
function fmt(v){var a=Math.abs(v);return a>=100?v.toFixed(0):a>=1?v.toFixed(2):v.toPrecision(3);}
document.querySelectorAll('svg[data-x0]').forEach(function(svg){
function a(k){return parseFloat(svg.getAttribute('data-'+k));}
svg.addEventListener('mousemove',function(ev){
var m=svg.getScreenCTM();if(!m){return;}
var pt=svg.createSVGPoint();pt.x=ev.clientX;pt.y=ev.clientY;var p=pt.matrixTransform(m.inverse());
var fx=(p.x-a('pl'))/a('pw'),fy=1-(p.y-a('pt'))/a('ph');
if(fx<0||fx>1||fy<0||fy>1){tip.style.display='none';return;}
var x=svg.getAttribute('data-xlog')?Math.pow(10,Math.log10(a('x0'))+fx*(Math.log10(a('x1'))-Math.log10(a('x0')))):a('x0')+fx*(a('x1')-a('x0'));
var y=a('y0')+fy*(a('y1')-a('y0'));
tip.textContent=svg.getAttribute('data-xl')+': '+fmt(x)+'\n'+svg.getAttribute('data-yl')+': '+fmt(y);
tip.style.display='block';tip.style.left=(ev.pageX+14)+'px';tip.style.top=(ev.pageY+14)+'px';});
svg.addEventListener('mouseleave',function(){tip.style.display='none';});
svg.querySelectorAll('.li').forEach(function(li){li.addEventListener('click',function(){
var s=svg.querySelector('.s[data-s="'+li.getAttribute('data-s')+'"]');if(s){s.classList.toggle('off');}
li.classList.toggle('dim');});});});
document.querySelectorAll('input.run-toggle').forEach(function(cb){cb.addEventListener('change',function(){
document.querySelectorAll('svg .run-'+cb.getAttribute('data-run')).forEach(function(el){el.classList.toggle('hidden',!cb.checked);});});});
document.body.setAttribute('data-charts',String(document.querySelectorAll('figure.chart svg').length));
document.body.setAttribute('data-ok','1');
}catch(e){document.body.setAttribute('data-error',String(e));}
})();
